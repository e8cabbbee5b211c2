//! Keeping secrets out of logs: the user and password of a URI (`s3://KEY:SECRET@bucket`,
//! `ftp://user:pass@host`) and the values of settings whose names say they are secret.

use serde_json::Value;

/// `uri` with the user and password of its authority replaced by `***` — of every
/// URI in the text (a setting given as JSON text holds several).
pub fn redact_uri(uri: &str) -> String {
    let mut out = String::with_capacity(uri.len());
    let mut rest = uri;
    while let Some(i) = rest.find("://") {
        let start = i + 3;
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(['/', '?', '#', '"', '\'', ' ', ',', '}'])
            .unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            out.push_str("***");
            rest = &rest[at..];
        }
    }
    out.push_str(rest);
    out
}

/// Whether a setting's name says its value is a secret (`AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, a `..._PASSWORD`).
pub fn is_secret_setting(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["SECRET", "PASSWORD", "PASSWD", "TOKEN", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w))
}

/// A setting's value as it may be logged: `"***"` for a secret setting, every URI in it
/// (keys included, as in `FEEDS`) with its credentials redacted.
pub fn redact_setting(name: &str, value: &Value) -> Value {
    if is_secret_setting(name) && !value.is_null() {
        return Value::String("***".into());
    }
    redact_value(value)
}

fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_uri(s)),
        Value::Array(a) => Value::Array(a.iter().map(redact_value).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (redact_uri(k), redact_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uris_and_settings() {
        assert_eq!(redact_uri("ftp://u:p@h/a@b"), "ftp://***@h/a@b");
        assert_eq!(redact_uri("s3://bucket/k"), "s3://bucket/k");
        assert_eq!(redact_uri("/tmp/a@b.jl"), "/tmp/a@b.jl");
        assert_eq!(
            redact_uri(r#"{"s3://b/x": 1, "ftp://u:p@h/y": 2}"#),
            r#"{"s3://b/x": 1, "ftp://***@h/y": 2}"#
        );
        assert_eq!(
            redact_setting("AWS_SECRET_ACCESS_KEY", &json!("x")),
            json!("***")
        );
        assert_eq!(
            redact_setting("FEEDS", &json!({"s3://k:s@b/x": {"format": "json"}})),
            json!({"s3://***@b/x": {"format": "json"}})
        );
    }
}
