//! The HTTP pieces of `rein serve`'s routes: bodies, JSON answers, errors
//! as `{"error": "..."}` with their status.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Response, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The body every answer has.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;
/// Largest request body read (a prompt with attachments fits).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// A route's failure: the status and the one line that says why.
#[derive(Debug)]
pub struct Failure {
    pub status: StatusCode,
    pub message: String,
}

impl Failure {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::CONFLICT, message)
    }

    pub fn internal(message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    pub fn into_response(self) -> Response<Body> {
        json(self.status, &serde_json::json!({ "error": self.message }))
    }
}

impl From<rein_core::StoreError> for Failure {
    fn from(e: rein_core::StoreError) -> Failure {
        match e {
            rein_core::StoreError::NotFound(_) => Failure::not_found(e.to_string()),
            rein_core::StoreError::Ambiguous { .. } => Failure::bad_request(e.to_string()),
            rein_core::StoreError::LeaseLost { .. } => Failure::conflict(e.to_string()),
            // Said as it is; a load balancer may send the next try elsewhere.
            rein_core::StoreError::Unavailable(_) => {
                Failure::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            other => Failure::internal(other.to_string()),
        }
    }
}

impl From<crate::hosting::HostError> for Failure {
    fn from(e: crate::hosting::HostError) -> Failure {
        match e {
            crate::hosting::HostError::Usage(m) => Failure::bad_request(m),
            crate::hosting::HostError::Internal(m) => Failure::internal(m),
        }
    }
}

/// A JSON answer.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let text = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// An answer with no body.
pub fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// The request's JSON body as `T`; an empty body reads as `{}`.
pub async fn read_json<T: DeserializeOwned>(body: Incoming) -> Result<T, Failure> {
    let bytes = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                Failure::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is larger than {} MiB", MAX_BODY >> 20),
                )
            } else {
                Failure::bad_request(format!("cannot read the request body: {e}"))
            }
        })?
        .to_bytes();
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    serde_json::from_slice(bytes)
        .map_err(|e| Failure::bad_request(format!("the request body is not valid: {e}")))
}
