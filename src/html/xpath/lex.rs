//! XPath 1.0 tokens (§3.7 of the recommendation), with its two disambiguation rules:
//! after a token that can end an operand, `*` is the multiplication operator and a name
//! is an operator name (`and`, `or`, `div`, `mod`); a name followed by `(` is a function
//! or node type, and one followed by `::` an axis.

use super::error::XPathError;

/// One token, with the character offset where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// `@`
    At,
    /// `,`
    Comma,
    /// `::`
    ColonColon,
    /// `/`
    Slash,
    /// `//`
    SlashSlash,
    /// `|`
    Pipe,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `*` as the multiplication operator.
    Mul,
    /// `and`, `or`, `div`, `mod` as operators.
    OpName(&'static str),
    /// `*` as a name test.
    Star,
    /// `prefix:*`
    PrefixStar(String),
    /// A (possibly prefixed) name: `(prefix, local)`.
    Name(Option<String>, String),
    /// A string literal.
    Literal(String),
    /// A number literal.
    Number(f64),
    /// `$name`
    Var(String),
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-' || c == '.'
}

/// XPath's whitespace (XML's `S`).
pub(crate) fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Splits an expression into tokens, each with its character offset.
pub(crate) fn tokenize(expr: &str) -> Result<Vec<(Tok, usize)>, XPathError> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out: Vec<(Tok, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        let start = i;
        let next = chars.get(i + 1).copied();
        // Rule 1: does the previous token end an operand?
        let operand_ended = out.last().is_some_and(|(t, _)| {
            !matches!(
                t,
                Tok::At
                    | Tok::ColonColon
                    | Tok::LParen
                    | Tok::LBracket
                    | Tok::Comma
                    | Tok::Slash
                    | Tok::SlashSlash
                    | Tok::Pipe
                    | Tok::Plus
                    | Tok::Minus
                    | Tok::Eq
                    | Tok::Ne
                    | Tok::Lt
                    | Tok::Le
                    | Tok::Gt
                    | Tok::Ge
                    | Tok::Mul
                    | Tok::OpName(_)
            )
        });
        let tok = match c {
            '(' => {
                i += 1;
                Tok::LParen
            }
            ')' => {
                i += 1;
                Tok::RParen
            }
            '[' => {
                i += 1;
                Tok::LBracket
            }
            ']' => {
                i += 1;
                Tok::RBracket
            }
            '@' => {
                i += 1;
                Tok::At
            }
            ',' => {
                i += 1;
                Tok::Comma
            }
            '|' => {
                i += 1;
                Tok::Pipe
            }
            '+' => {
                i += 1;
                Tok::Plus
            }
            '-' => {
                i += 1;
                Tok::Minus
            }
            '=' => {
                i += 1;
                Tok::Eq
            }
            '!' if next == Some('=') => {
                i += 2;
                Tok::Ne
            }
            '<' if next == Some('=') => {
                i += 2;
                Tok::Le
            }
            '<' => {
                i += 1;
                Tok::Lt
            }
            '>' if next == Some('=') => {
                i += 2;
                Tok::Ge
            }
            '>' => {
                i += 1;
                Tok::Gt
            }
            ':' if next == Some(':') => {
                i += 2;
                Tok::ColonColon
            }
            '/' if next == Some('/') => {
                i += 2;
                Tok::SlashSlash
            }
            '/' => {
                i += 1;
                Tok::Slash
            }
            '*' => {
                i += 1;
                if operand_ended { Tok::Mul } else { Tok::Star }
            }
            '.' if next == Some('.') => {
                i += 2;
                Tok::DotDot
            }
            '.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                let (n, end) = number(&chars, i);
                i = end;
                Tok::Number(n)
            }
            '.' => {
                i += 1;
                Tok::Dot
            }
            '0'..='9' => {
                let (n, end) = number(&chars, i);
                i = end;
                Tok::Number(n)
            }
            '"' | '\'' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .ok_or_else(|| XPathError::new(start, "unterminated string literal"))?;
                let s: String = chars[i + 1..i + 1 + close].iter().collect();
                i += close + 2;
                Tok::Literal(s)
            }
            '$' => {
                i += 1;
                let (prefix, local, end) = qname(&chars, i)
                    .ok_or_else(|| XPathError::new(start, "expected a variable name after '$'"))?;
                i = end;
                Tok::Var(match prefix {
                    Some(p) => format!("{p}:{local}"),
                    None => local,
                })
            }
            c if is_name_start(c) => {
                let (prefix, local, end) =
                    qname(&chars, i).ok_or_else(|| XPathError::new(start, "bad name"))?;
                if operand_ended && prefix.is_none() {
                    let op = match local.as_str() {
                        "and" => Some("and"),
                        "or" => Some("or"),
                        "div" => Some("div"),
                        "mod" => Some("mod"),
                        _ => None,
                    };
                    match op {
                        Some(op) => {
                            i = end;
                            out.push((Tok::OpName(op), start));
                            continue;
                        }
                        None => {
                            return Err(XPathError::new(
                                start,
                                format!("expected an operator, found '{local}'"),
                            ));
                        }
                    }
                }
                // `prefix:*`
                if prefix.is_none()
                    && chars.get(end) == Some(&':')
                    && chars.get(end + 1) == Some(&'*')
                {
                    i = end + 2;
                    Tok::PrefixStar(local)
                } else {
                    i = end;
                    Tok::Name(prefix, local)
                }
            }
            other => {
                return Err(XPathError::new(
                    start,
                    format!("unexpected character {other:?}"),
                ));
            }
        };
        out.push((tok, start));
    }
    Ok(out)
}

/// A name, with an optional `prefix:` (not `::`, which is the axis separator).
fn qname(chars: &[char], mut i: usize) -> Option<(Option<String>, String, usize)> {
    let ncname = |mut i: usize| -> Option<(String, usize)> {
        if !chars.get(i).copied().is_some_and(is_name_start) {
            return None;
        }
        let start = i;
        while chars.get(i).copied().is_some_and(is_name_char) {
            i += 1;
        }
        Some((chars[start..i].iter().collect(), i))
    };
    let (first, end) = ncname(i)?;
    i = end;
    if chars.get(i) == Some(&':')
        && chars.get(i + 1) != Some(&':')
        && let Some((local, end)) = ncname(i + 1)
    {
        return Some((Some(first), local, end));
    }
    Some((None, first, i))
}

/// A number literal as libxml2 reads it: digits, an optional fraction and an optional
/// exponent (libxml2 accepts `1e3`, which XPath 1.0's grammar does not have).
fn number(chars: &[char], start: usize) -> (f64, usize) {
    let mut i = start;
    while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    let mantissa_end = i;
    let mut exponent = 0i32;
    if matches!(chars.get(i), Some('e' | 'E')) {
        // libxml2 takes `e`, a sign and no digits too (`1e` and `1e+` are 1).
        i += 1;
        let negative = chars.get(i) == Some(&'-');
        if matches!(chars.get(i), Some('+' | '-')) {
            i += 1;
        }
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            exponent = exponent.saturating_mul(10).saturating_add(d as i32);
            i += 1;
        }
        if negative {
            exponent = -exponent;
        }
    }
    let text: String = chars[start..mantissa_end].iter().collect();
    let text = format!("{text}e{exponent}");
    (text.parse().unwrap_or(f64::NAN), i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap().into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn star_and_names_by_context() {
        assert_eq!(
            toks("* * *"),
            [Tok::Star, Tok::Mul, Tok::Star],
            "the spec's example"
        );
        assert_eq!(
            toks("div div div"),
            [
                Tok::Name(None, "div".into()),
                Tok::OpName("div"),
                Tok::Name(None, "div".into())
            ]
        );
        assert_eq!(
            toks("re:test(.)")[0],
            Tok::Name(Some("re".into()), "test".into())
        );
        assert_eq!(toks("child::a")[1], Tok::ColonColon);
        assert_eq!(toks("svg:*")[0], Tok::PrefixStar("svg".into()));
        assert_eq!(toks(".5")[0], Tok::Number(0.5));
    }
}
