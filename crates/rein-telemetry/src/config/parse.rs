//! Parsing the OTEL_* variables' values: `key=value` lists with
//! percent-encoding (headers, resource attributes), endpoints, numbers.

use std::time::Duration;

use percent_encoding::percent_decode_str;
use reqwest::Url;

use crate::TelemetryError;

/// `k1=v1,k2=v2` with keys and values trimmed and percent-decoded (the W3C
/// baggage format the OTLP spec names). Empty items are skipped. The error
/// says what is wrong but never quotes a value.
pub(crate) fn key_values(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (index, item) in text.split(',').enumerate() {
        if item.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!("item {} has no `=`", index + 1));
        };
        let key = decode(key.trim()).map_err(|e| format!("item {}: {e}", index + 1))?;
        if key.is_empty() {
            return Err(format!("item {} has an empty key", index + 1));
        }
        let value = decode(value.trim()).map_err(|e| format!("key `{key}`: {e}"))?;
        out.push((key, value));
    }
    Ok(out)
}

fn decode(text: &str) -> Result<String, &'static str> {
    percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| "percent-encoding is not UTF-8")
}

/// Headers for requests: `key_values` whose names and values HTTP accepts.
pub(crate) fn headers(var: &str, text: &str) -> Result<Vec<(String, String)>, TelemetryError> {
    let bad = |reason: String| TelemetryError::InvalidHeaders {
        var: var.to_string(),
        reason,
    };
    let pairs = key_values(text).map_err(bad)?;
    for (key, value) in &pairs {
        if reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_err() {
            return Err(bad(format!("`{key}` is not a valid header name")));
        }
        if reqwest::header::HeaderValue::from_str(value).is_err() {
            return Err(bad(format!(
                "the value of `{key}` is not a valid header value"
            )));
        }
    }
    Ok(pairs)
}

/// An absolute `http://` or `https://` URL.
pub(crate) fn endpoint(var: &str, text: &str) -> Result<Url, TelemetryError> {
    let bad = |reason: String| TelemetryError::InvalidEndpoint {
        var: var.to_string(),
        reason,
    };
    let url = Url::parse(text.trim()).map_err(|e| bad(e.to_string()))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => Err(bad("it has no host".to_string())),
        other => Err(bad(format!("the scheme is `{other}`"))),
    }
}

/// `base` with `path` appended to its path (`http://h/p` + `/v1/traces` is
/// `http://h/p/v1/traces`); a query or fragment of `base` is dropped.
pub(crate) fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}{}", base.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// Milliseconds, as OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_BSP_* give them.
pub(crate) fn millis(var: &str, text: &str) -> Result<Duration, TelemetryError> {
    number(var, text).map(Duration::from_millis)
}

pub(crate) fn number(var: &str, text: &str) -> Result<u64, TelemetryError> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| TelemetryError::InvalidNumber {
            var: var.to_string(),
            value: text.to_string(),
        })
}

/// The OTEL convention for booleans: `true` in any case is true, anything
/// else false.
pub(crate) fn is_true(text: Option<&str>) -> bool {
    text.is_some_and(|t| t.trim().eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_are_trimmed_and_percent_decoded() {
        let kv = key_values(" a = 1 ,, b=x%2Cy%3Dz ,c=").unwrap();
        assert_eq!(
            kv,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x,y=z".into()),
                ("c".into(), "".into())
            ]
        );
        assert!(key_values("novalue").unwrap_err().contains("no `=`"));
        assert!(key_values("=v").unwrap_err().contains("empty key"));
    }

    #[test]
    fn join_appends_to_the_base_path() {
        let base = Url::parse("http://h:4318/otel/").unwrap();
        assert_eq!(
            join(&base, "/v1/traces").as_str(),
            "http://h:4318/otel/v1/traces"
        );
        let bare = Url::parse("http://h:4318").unwrap();
        assert_eq!(
            join(&bare, "/v1/metrics").as_str(),
            "http://h:4318/v1/metrics"
        );
    }
}
