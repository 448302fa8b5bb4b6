//! OTLP over gRPC without a gRPC library: a unary call is one HTTP/2 POST
//! whose body is a length-prefixed message, and whose outcome is the
//! `grpc-status` in the response's trailers (or, for a "trailers-only"
//! answer, in its headers).

use std::time::Duration;

use http_body_util::BodyExt;
use reqwest::header::HeaderMap;

use crate::export::ExportFailure;

/// A gRPC message frame: compressed flag 0, a 4-byte big-endian length,
/// the message.
pub(crate) fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// `grpc-status` and `grpc-message` (percent-decoded) from `headers`.
fn status(headers: &HeaderMap) -> Option<(u32, String)> {
    let code = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| {
            percent_encoding::percent_decode_str(m)
                .decode_utf8_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    Some((code, message))
}

fn outcome(code: u32, message: String) -> Result<(), ExportFailure> {
    if code == 0 {
        Ok(())
    } else {
        Err(ExportFailure::Grpc { code, message })
    }
}

/// One unary call of `url` (the method's path included) with `message`.
pub(crate) async fn call(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: &[(String, String)],
    timeout: Duration,
    message: &[u8],
) -> Result<(), ExportFailure> {
    let mut request = client
        .post(url.clone())
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", format!("{}m", timeout.as_millis().max(1)))
        .timeout(timeout);
    for (key, value) in headers {
        request = request.header(key.as_str(), value.as_str());
    }
    let response = request
        .body(frame(message))
        .send()
        .await
        .map_err(|e| ExportFailure::from_reqwest(&e))?;
    if !response.status().is_success() {
        return Err(ExportFailure::Status(response.status().as_u16()));
    }
    // A "trailers-only" answer (how servers refuse a call) carries the
    // status in its headers.
    if let Some((code, message)) = status(response.headers()) {
        return outcome(code, message);
    }
    // Otherwise the status comes in the trailers after the body; reqwest
    // hands the body's frames on, trailers included.
    let body = reqwest::Body::from(response)
        .collect()
        .await
        .map_err(|e| ExportFailure::from_reqwest(&e))?;
    match body.trailers().and_then(status) {
        Some((code, message)) => outcome(code, message),
        None => Err(ExportFailure::NoGrpcStatus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_flag_length_message() {
        assert_eq!(frame(b"abc"), vec![0, 0, 0, 0, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn the_status_is_read_with_its_message_decoded() {
        let mut h = HeaderMap::new();
        h.insert("grpc-status", "14".parse().unwrap());
        h.insert("grpc-message", "down%20for%20now".parse().unwrap());
        assert_eq!(status(&h), Some((14, "down for now".to_string())));
    }
}
