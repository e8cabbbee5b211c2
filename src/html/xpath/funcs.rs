//! The function library: XPath 1.0's core functions (§4), parsel's `has-class`, and
//! the EXSLT regular-expression (`re:`) and set (`set:`) functions lxml provides —
//! plus the number formatting the results need (libxml2's inside expressions,
//! Python's `str(float)` for what parsel hands back).

/// A resolved function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Last,
    Position,
    Count,
    Id,
    LocalName,
    NamespaceUri,
    Name,
    String,
    Concat,
    StartsWith,
    Contains,
    SubstringBefore,
    SubstringAfter,
    Substring,
    StringLength,
    NormalizeSpace,
    Translate,
    Boolean,
    Not,
    True,
    False,
    Lang,
    Number,
    Sum,
    Floor,
    Ceiling,
    Round,
    HasClass,
    ReTest,
    ReMatch,
    ReReplace,
    SetDifference,
    SetIntersection,
    SetDistinct,
    SetHasSameNode,
    SetLeading,
    SetTrailing,
}

impl Func {
    /// The function a (possibly prefixed) name calls.
    pub(crate) fn resolve(
        prefix: Option<&str>,
        name: &str,
        prefixes: &[&str],
    ) -> Result<Self, String> {
        use Func::*;
        let f = match prefix {
            None => match name {
                "last" => Last,
                "position" => Position,
                "count" => Count,
                "id" => Id,
                "local-name" => LocalName,
                "namespace-uri" => NamespaceUri,
                "name" => Name,
                "string" => String,
                "concat" => Concat,
                "starts-with" => StartsWith,
                "contains" => Contains,
                "substring-before" => SubstringBefore,
                "substring-after" => SubstringAfter,
                "substring" => Substring,
                "string-length" => StringLength,
                "normalize-space" => NormalizeSpace,
                "translate" => Translate,
                "boolean" => Boolean,
                "not" => Not,
                "true" => True,
                "false" => False,
                "lang" => Lang,
                "number" => Number,
                "sum" => Sum,
                "floor" => Floor,
                "ceiling" => Ceiling,
                "round" => Round,
                "has-class" => HasClass,
                _ => return Err(format!("unknown function '{name}'")),
            },
            Some(p) if !prefixes.contains(&p) => {
                return Err(format!("undefined namespace prefix '{p}'"));
            }
            Some("re") => match name {
                "test" => ReTest,
                "match" => ReMatch,
                "replace" => ReReplace,
                _ => return Err(format!("unknown function 're:{name}'")),
            },
            Some("set") => match name {
                "difference" => SetDifference,
                "intersection" => SetIntersection,
                "distinct" => SetDistinct,
                "has-same-node" => SetHasSameNode,
                "leading" => SetLeading,
                "trailing" => SetTrailing,
                _ => return Err(format!("unknown function 'set:{name}'")),
            },
            Some(p) => return Err(format!("unknown function '{p}:{name}'")),
        };
        Ok(f)
    }

    /// Checks the number of arguments.
    pub(crate) fn check_arity(self, n: usize) -> Result<(), String> {
        use Func::*;
        let (min, max) = match self {
            Last | Position | True | False => (0, 0),
            Count | Id | Boolean | Not | Lang | Sum | Floor | Ceiling | Round | SetDistinct => {
                (1, 1)
            }
            LocalName | NamespaceUri | Name | String | StringLength | NormalizeSpace | Number => {
                (0, 1)
            }
            Concat => (2, usize::MAX),
            StartsWith | Contains | SubstringBefore | SubstringAfter => (2, 2),
            SetDifference | SetIntersection | SetHasSameNode | SetLeading | SetTrailing => (2, 2),
            Substring => (2, 3),
            Translate => (3, 3),
            HasClass => (1, usize::MAX),
            ReTest | ReMatch => (2, 3),
            ReReplace => (4, 4),
        };
        if n < min || n > max {
            return Err(format!("invalid number of arguments ({n}) for {self:?}"));
        }
        Ok(())
    }
}

/// A number as XPath's `string()` gives it, the way libxml2 formats it: integers
/// without a fraction, `NaN`, `Infinity`; other values with up to 15 significant
/// digits, in exponent form outside 1e-5 … 1e9 (XPath 1.0 itself never uses an
/// exponent; libxml2 does, and Scrapy users see libxml2's strings).
pub(crate) fn number_to_string(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if n == 0.0 {
        return "0".into();
    }
    if n > f64::from(i32::MIN) && n < f64::from(i32::MAX) && n == n.trunc() {
        return format!("{}", n as i64);
    }
    let abs = n.abs();
    let mut s = if !(1e-5..=1e9).contains(&abs) {
        // C's "%.14e": mantissa digits, then e, sign, at least two exponent digits.
        let e = format!("{n:.14e}");
        let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    } else {
        let integer_place = abs.log10() as i32;
        let fraction_place = if integer_place > 0 {
            15 - integer_place - 1
        } else {
            15 - integer_place
        };
        format!("{n:.*}", fraction_place.max(0) as usize)
    };
    s = strip_fraction_zeros(&s).to_owned();
    s
}

fn strip_fraction_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    let t = s.trim_end_matches('0');
    t.strip_suffix('.').unwrap_or(t)
}

/// Python's `str(float)` (shortest round-trip digits; exponent form when the decimal
/// exponent is below -4 or 16 and above), which is what parsel's `.get()` gives for a
/// number result.
pub(crate) fn python_float_repr(n: f64) -> String {
    if n.is_nan() {
        return "nan".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    crate::util::python_float_repr(n)
}

/// A string as a number (§4.4, with libxml2's acceptance of an exponent): optional
/// whitespace, an optional minus, digits with an optional fraction, optional
/// whitespace; anything else is NaN.
pub(crate) fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(super::lex::is_space);
    let b = t.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut any = i > digits_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        any |= i > f;
    }
    if !any {
        return f64::NAN;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let e = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > e {
            i = j;
        }
    }
    if i != b.len() {
        return f64::NAN;
    }
    t.parse().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_repr_like_python() {
        for (n, s) in [
            (3.0, "3.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1.5e-7, "1.5e-07"),
            (-0.0, "-0.0"),
            (123456789012.0, "123456789012.0"),
        ] {
            assert_eq!(python_float_repr(n), s, "{n}");
        }
    }

    #[test]
    fn strings_to_numbers() {
        assert_eq!(string_to_number(" 12 "), 12.0);
        assert_eq!(string_to_number("-.5"), -0.5);
        assert!(string_to_number("+1").is_nan());
        assert!(string_to_number("").is_nan());
        assert!(string_to_number(".").is_nan());
        assert_eq!(string_to_number("1."), 1.0);
    }
}
