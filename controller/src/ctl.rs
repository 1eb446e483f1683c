//! The client of the controller's HTTP API behind `fabricflow-controller ctl`: one request per
//! command, the bearer token on writes, the JSON answer or the API's error message.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{header, Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Every request gives up after this long (the API answers from memory; a re-plan is
/// asynchronous).
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a `ctl` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error("bad API address `{0}`: expected http://HOST:PORT")]
    BadUrl(String),
    #[error("cannot reach the controller's API at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("no answer from {0} within 10 s")]
    Timeout(String),
    #[error("{status}: {message}")]
    Refused { status: u16, message: String },
    #[error("the API answered something that is not JSON: {0}")]
    NotJson(String),
}

/// One `ctl` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Every link with its health.
    Links,
    /// The operator state (drains, freezes).
    Status,
    DrainLink(String),
    UndrainLink(String),
    DrainSwitch(String),
    UndrainSwitch(String),
    Freeze(String),
    Unfreeze(String),
    /// One switch, or every switch.
    Resync(Option<String>),
}

impl Command {
    /// The method and path of the command's request.
    pub fn request(&self) -> (Method, String) {
        let sw = |s: &str, what: &str| {
            (
                Method::POST,
                format!("/api/v1/switches/{}/{what}", escape(s)),
            )
        };
        match self {
            Command::Links => (Method::GET, "/api/v1/links".into()),
            Command::Status => (Method::GET, "/api/v1/operator".into()),
            Command::DrainLink(l) => (Method::POST, format!("/api/v1/links/{}/drain", escape(l))),
            Command::UndrainLink(l) => {
                (Method::POST, format!("/api/v1/links/{}/undrain", escape(l)))
            }
            Command::DrainSwitch(s) => sw(s, "drain"),
            Command::UndrainSwitch(s) => sw(s, "undrain"),
            Command::Freeze(s) => sw(s, "freeze"),
            Command::Unfreeze(s) => sw(s, "unfreeze"),
            Command::Resync(Some(s)) => sw(s, "resync"),
            Command::Resync(None) => (Method::POST, "/api/v1/resync".into()),
        }
    }
}

/// Percent-encodes everything but unreserved characters and `:` (link ends are `SWITCH:PORT`).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A client of one controller's API.
#[derive(Debug)]
pub struct ApiClient {
    base: String,
    token: Option<String>,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl ApiClient {
    /// A client of the API at `base` (`http://HOST:PORT`, or `HOST:PORT`).
    pub fn new(base: &str, token: Option<String>) -> Result<Self, CtlError> {
        let base = if base.contains("://") {
            base.trim_end_matches('/').to_owned()
        } else {
            format!("http://{}", base.trim_end_matches('/'))
        };
        let uri: Uri = base.parse().map_err(|_| CtlError::BadUrl(base.clone()))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(CtlError::BadUrl(base));
        }
        Ok(ApiClient {
            base,
            token,
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// Runs `cmd`: the API's JSON answer, or why there is none.
    pub async fn run(&self, cmd: &Command) -> Result<serde_json::Value, CtlError> {
        let (method, path) = cmd.request();
        self.call(method, &path).await
    }

    /// One request; the token goes with every request that has one.
    pub async fn call(&self, method: Method, path: &str) -> Result<serde_json::Value, CtlError> {
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        if let Some(t) = &self.token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = req
            .body(Empty::new())
            .map_err(|_| CtlError::BadUrl(url.clone()))?;
        let unreachable = |e: &dyn std::fmt::Display| CtlError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        };
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| unreachable(&e))?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(&e))?
                .to_bytes();
            Ok::<_, CtlError>((status, body))
        };
        let (status, body) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| CtlError::Timeout(url.clone()))??;
        let text = String::from_utf8_lossy(&body);
        let json: Option<serde_json::Value> = serde_json::from_str(&text).ok();
        if !status.is_success() {
            let message = json
                .as_ref()
                .and_then(|j| j.get("error"))
                .and_then(|e| e.as_str())
                .map_or_else(|| text.trim().to_owned(), str::to_owned);
            return Err(CtlError::Refused {
                status: status.as_u16(),
                message,
            });
        }
        json.ok_or_else(|| CtlError::NotJson(text.chars().take(200).collect()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn commands_map_to_their_requests() {
        assert_eq!(
            Command::DrainLink("g0s0:3".into()).request(),
            (Method::POST, "/api/v1/links/g0s0:3/drain".into())
        );
        assert_eq!(
            Command::UndrainLink("0000000000000101:3-0000000000000102:2".into()).request(),
            (
                Method::POST,
                "/api/v1/links/0000000000000101:3-0000000000000102:2/undrain".into()
            )
        );
        assert_eq!(
            Command::Freeze("a b/c".into()).request(),
            (Method::POST, "/api/v1/switches/a%20b%2Fc/freeze".into())
        );
        assert_eq!(
            Command::Resync(None).request(),
            (Method::POST, "/api/v1/resync".into())
        );
        assert_eq!(Command::Links.request().0, Method::GET);
    }

    #[test]
    fn addresses() {
        assert!(ApiClient::new("127.0.0.1:9653", None).is_ok());
        assert!(ApiClient::new("http://127.0.0.1:9653/", None).is_ok());
        assert!(matches!(
            ApiClient::new("https://x:1", None),
            Err(CtlError::BadUrl(_))
        ));
        assert!(matches!(
            ApiClient::new("not a url", None),
            Err(CtlError::BadUrl(_))
        ));
    }
}
