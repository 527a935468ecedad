//! `--webhook URL`: the event's JSON POSTed to a receiver, retried with backoff, each
//! attempt bounded in time.
//!
//! Plain HTTP through hyper's pooled client (already in the build through tonic): a receiver
//! that takes every change of a busy cluster keeps one connection instead of a handshake per
//! event.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, USER_AGENT};
use hyper::{Request, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::HookError;
use super::payload::Payload;
use super::stats::Outcome;

/// The wait before the first retry; it doubles for each one after.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// No wait between attempts grows past this, however many retries are asked for.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A pooled connection unused this long is closed, before most servers close it under us.
const IDLE: Duration = Duration::from_secs(30);

pub(super) struct Webhook {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
    /// The URL without its path or query, for logs: a receiver's path often is its secret
    /// (Slack's and many others' webhook URLs are bearer tokens).
    pub(super) shown: String,
}

/// How one attempt ended.
enum Attempt {
    Done,
    /// Worth another try: no connection, a 5xx, 408 or 429.
    Retry(Outcome, String),
    /// Another try would get the same answer (a 4xx): give up now.
    GiveUp(String),
}

impl Webhook {
    /// Checks `url` (the `position`th webhook, from 1) and makes its client. Errors name
    /// the webhook by position and host only, never its path or credentials.
    pub(super) fn new(url: &str, position: usize, timeout: Duration) -> Result<Webhook, HookError> {
        let bad = |reason: String| HookError::Webhook { position, reason };
        let parsed = url::Url::parse(url).map_err(|e| {
            bad(format!(
                "it is not a URL ({e}); give it as http://host:port/path"
            ))
        })?;
        let host = parsed.host_str().unwrap_or_default();
        let shown = match parsed.port() {
            Some(port) => format!("{}://{host}:{port}", parsed.scheme()),
            None => format!("{}://{host}", parsed.scheme()),
        };
        match parsed.scheme() {
            "http" => {}
            "https" => {
                return Err(bad(format!(
                    "{shown}: https is not supported yet; use http:// (a receiver on the \
                     same host or network, or a local TLS proxy)"
                )));
            }
            other => {
                return Err(bad(format!(
                    "the scheme is {other}:, not http:; give it as http://host:port/path"
                )));
            }
        }
        if host.is_empty() {
            return Err(bad(
                "it names no host; give it as http://host:port/path".into()
            ));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad(format!(
                "{shown}: a user or password in a webhook URL is not supported; put the \
                 receiver's token in its path or query instead"
            )));
        }
        let uri: Uri = parsed
            .as_str()
            .parse()
            .map_err(|e| bad(format!("{shown}: {e}")))?;
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE)
            .build(connector);
        Ok(Webhook { client, uri, shown })
    }

    /// Delivers one event: the first attempt, then up to `retries` more with a doubling
    /// wait. Returns the outcome and, when not `Ok`, why the last attempt failed.
    pub(super) async fn post(
        &self,
        p: &Payload,
        timeout: Duration,
        retries: u32,
    ) -> (Outcome, String) {
        let mut backoff = FIRST_BACKOFF;
        let mut last = (Outcome::Failed, String::new());
        for attempt in 0..=retries {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            match self.attempt(p, timeout).await {
                Attempt::Done => return (Outcome::Ok, String::new()),
                Attempt::GiveUp(why) => return (Outcome::Failed, why),
                Attempt::Retry(outcome, why) => last = (outcome, why),
            }
        }
        if retries == 0 {
            return last;
        }
        let tries = retries + 1;
        (last.0, format!("{} (after {tries} attempts)", last.1))
    }

    async fn attempt(&self, p: &Payload, timeout: Duration) -> Attempt {
        let request = Request::post(self.uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, concat!("electop/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(Bytes::from(p.json().to_owned())));
        let request = match request {
            Ok(r) => r,
            Err(e) => return Attempt::GiveUp(format!("could not make the request: {e}")),
        };
        let exchange = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            // Read the answer to its end so the connection can carry the next event.
            let _ = response.into_body().collect().await;
            Ok::<StatusCode, hyper_util::client::legacy::Error>(status)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Err(_) => Attempt::Retry(
                Outcome::Timeout,
                format!("no answer within {} ms", timeout.as_millis()),
            ),
            Ok(Err(e)) => Attempt::Retry(Outcome::Failed, error_chain(&e)),
            Ok(Ok(s)) if s.is_success() => Attempt::Done,
            Ok(Ok(s))
                if s.is_server_error()
                    || s == StatusCode::REQUEST_TIMEOUT
                    || s == StatusCode::TOO_MANY_REQUESTS =>
            {
                Attempt::Retry(Outcome::Failed, format!("answered {s}"))
            }
            Ok(Ok(s)) => Attempt::GiveUp(format!("answered {s}")),
        }
    }
}

/// hyper's error and its causes ("client error (Connect): tcp connect error: Connection
/// refused"): the top one alone rarely says what went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(url: &str) -> String {
        match Webhook::new(url, 2, Duration::from_secs(1)) {
            Ok(_) => panic!("{url} accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[tokio::test]
    async fn a_bad_webhook_url_is_refused_naming_which_and_never_its_path() {
        let https = err("https://hooks.example.com/T000/SECRET");
        assert!(https.contains("webhook 2") && https.contains("https is not supported"));
        assert!(https.contains("https://hooks.example.com") && !https.contains("SECRET"));
        let creds = err("http://me:hunter2@example.com/x");
        assert!(
            creds.contains("user or password") && !creds.contains("hunter2"),
            "{creds}"
        );
        assert!(err("example.com/x").contains("http://host:port/path"));
        assert!(err("ftp://example.com/x").contains("ftp:"));
        let ok = Webhook::new("http://127.0.0.1:9/SECRET?k=v", 1, Duration::from_secs(1))
            .expect("plain http");
        assert_eq!(ok.shown, "http://127.0.0.1:9");
    }
}
