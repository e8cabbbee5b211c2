//! parsel's `.re()` / `.re_first()`: regular expressions over selected strings, with
//! parsel's rules (a named group `extract`, else every numbered group flattened, else
//! the whole matches) and w3lib's `replace_entities(keep=["lt", "amp"])` on each result.
//! Patterns are Rust `regex` syntax (linear time: a page cannot make one backtrack);
//! Python-only syntax (look-around, backreferences) is an error.

use regex::Regex;

use crate::crawl::util::entities::w3lib_replace_entities;

/// parsel's `extract_regex(regex, text, replace_entities)`.
pub(crate) fn extract_regex(regex: &Regex, text: &str, replace_entities: bool) -> Vec<String> {
    let mut found: Vec<&str> = Vec::new();
    if regex.capture_names().any(|n| n == Some("extract")) {
        if let Some(m) = regex.captures(text).and_then(|c| c.name("extract")) {
            found.push(m.as_str());
        }
    } else {
        let groups = regex.captures_len() - 1;
        python_findall(regex, text, |caps| {
            if groups == 0 {
                found.push(caps.get(0).map_or("", |m| m.as_str()));
            } else {
                for g in 1..=groups {
                    found.push(caps.get(g).map_or("", |m| m.as_str()));
                }
            }
        });
    }
    found
        .into_iter()
        .map(|s| {
            if replace_entities {
                w3lib_replace_entities(s, &["lt", "amp"])
            } else {
                s.to_owned()
            }
        })
        .collect()
}

/// The matches Python's `findall` visits: unlike `Regex::captures_iter`, an empty match
/// right after a non-empty one counts (`findall(r"\w*", "one")` is `["one", ""]`); two
/// empty matches never share a position.
fn python_findall<'t>(regex: &Regex, text: &'t str, mut each: impl FnMut(&regex::Captures<'t>)) {
    let mut pos = 0;
    let mut last_empty: Option<usize> = None;
    while pos <= text.len() {
        let Some(caps) = regex.captures_at(text, pos) else {
            break;
        };
        let Some(m) = caps.get(0) else {
            break;
        };
        if m.is_empty() && last_empty == Some(m.start()) {
            // Already matched empty here: look from the next character.
            match text[m.start()..].chars().next() {
                Some(c) => pos = m.start() + c.len_utf8(),
                None => break,
            }
            continue;
        }
        each(&caps);
        last_empty = m.is_empty().then_some(m.end());
        pos = m.end();
    }
}
