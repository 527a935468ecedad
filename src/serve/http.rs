//! What `electop serve` answers over HTTP: `/metrics`, `/healthz`, `/readyz`, and the
//! `status --json` document, the `watch --json` stream and the `history --json` document
//! under `/api/v1/`. Every handler reads the one observed state; none touches a store.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::broadcast;

use super::auth::Auth;
use super::observer::Observed;

#[derive(Clone)]
pub(crate) struct Served {
    pub observed: Arc<RwLock<Observed>>,
    pub metrics: Arc<super::metrics::Metrics>,
    /// Each event as a `watch --json` line, for `/api/v1/events` readers.
    pub events: broadcast::Sender<Arc<str>>,
    pub auth: Arc<Auth>,
}

pub(crate) fn router(served: Served) -> Router {
    let auth = Arc::clone(&served.auth);
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/api/v1/elections", get(elections))
        .route("/api/v1/events", get(events))
        .route("/api/v1/history", get(history))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            let auth = Arc::clone(&auth);
            async move {
                match auth.check(req.headers()) {
                    Ok(()) => next.run(req).await,
                    Err(challenge) => *challenge,
                }
            }
        }))
        .with_state(served)
}

fn read(o: &RwLock<Observed>) -> std::sync::RwLockReadGuard<'_, Observed> {
    o.read().unwrap_or_else(|p| p.into_inner())
}

async fn metrics(State(s): State<Served>, headers: HeaderMap) -> Response {
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let content_type = if openmetrics {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    let vary = (header::VARY, "Accept-Encoding");
    let failed = || {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics\n",
        )
            .into_response()
    };
    if !accepts_gzip(&headers) {
        return match s.metrics.encode(openmetrics) {
            Ok(text) => ([(header::CONTENT_TYPE, content_type), vary], text).into_response(),
            Err(_) => failed(),
        };
    }
    match s.metrics.encode_gzip(openmetrics, GZIP_LEVEL) {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CONTENT_ENCODING, "gzip"),
                vary,
            ],
            body,
        )
            .into_response(),
        Err(_) => failed(),
    }
}

/// How hard a scrape is compressed: the fastest level. The text repeats the same names and
/// labels on every line, so it already shrinks a scrape many times over; a slower level
/// would only spend more of the scrape's CPU (docs/PERFORMANCE.md has the figures).
const GZIP_LEVEL: u32 = 1;

/// Whether the scraper takes a gzip body: `gzip` (or `*`) in `Accept-Encoding` without
/// `q=0`. Prometheus always asks; curl and `promtool` do not unless told, and get the text.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let codings = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    let mut star = false;
    for coding in codings {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or("");
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        if name.eq_ignore_ascii_case("gzip") {
            return !refused;
        }
        if name == "*" {
            star = !refused;
        }
    }
    star
}

/// Ready once every source has been read through and any history replayed; otherwise 503
/// naming the ones that are not.
async fn readyz(State(s): State<Served>) -> Response {
    let o = read(&s.observed);
    let waiting: Vec<String> = o
        .model
        .sources
        .iter()
        .filter(|src| !src.synced)
        .map(|src| match &src.conn {
            crate::model::ConnState::Down { error, .. } => {
                format!("{}: down: {error}", src.info.short)
            }
            _ => format!("{}: not read yet", src.info.short),
        })
        .collect();
    if waiting.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        let text = format!("not ready: {}\n", waiting.join("; "));
        (StatusCode::SERVICE_UNAVAILABLE, text).into_response()
    }
}

async fn elections(State(s): State<Served>) -> Response {
    let mut out = Vec::with_capacity(64 * 1024);
    let written = {
        let o = read(&s.observed);
        crate::output::write_compact(&o.model, o.model.now, &mut out)
    };
    match written {
        Ok(()) => ([(header::CONTENT_TYPE, "application/json")], out).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

/// `?election=NAME|SOURCE/NAME&since=WHEN&until=WHEN`: what `history --json` prints, from
/// the history serve keeps in memory (its journal read back at the start, then what it
/// sees): [`super::HISTORY`] changes per election unless `--history-limit` says more. A
/// parameter that cannot be read is a 400; an election no source holds, a 404.
async fn history(State(s): State<Served>, uri: Uri) -> Response {
    use crate::model::timeline::{When, parse_when};
    let bad = |why: String| (StatusCode::BAD_REQUEST, format!("{why}\n")).into_response();
    let (mut election, mut since, mut until) = (None, When::Ago(Duration::from_secs(3600)), None);
    let query = uri.query().unwrap_or("").as_bytes();
    for (k, v) in url::form_urlencoded::parse(query) {
        match k.as_ref() {
            "election" => election = Some(v.into_owned()),
            "since" => match parse_when(&v) {
                Ok(w) => since = w,
                Err(why) => return bad(format!("since: {why}")),
            },
            "until" => match parse_when(&v) {
                Ok(w) => until = Some(w),
                Err(why) => return bad(format!("until: {why}")),
            },
            other => {
                return bad(format!(
                    "unknown parameter `{other}`: election, since, until"
                ));
            }
        }
    }
    let now = SystemTime::now();
    let (since, until) = (since.resolve(now), until.map_or(now, |u| u.resolve(now)));
    if until < since {
        return bad("until is before since".into());
    }
    let body = {
        let o = read(&s.observed);
        let keys = match crate::output::history::select(&o.model, election.as_deref()) {
            Ok(keys) => keys,
            Err(why) => return (StatusCode::NOT_FOUND, format!("{why}\n")).into_response(),
        };
        let doc = crate::output::history::document(&o.model, &keys, (since, until), now);
        serde_json::to_vec(&doc)
    };
    match body {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

/// NDJSON, as `watch --json` prints it: a `current` line per election as it stands now,
/// then every event as it happens. A reader too slow to keep up is told how many it missed
/// and carries on.
async fn events(State(s): State<Served>) -> Response {
    // Subscribed before the current lines are made: nothing falls between them.
    let rx = s.events.subscribe();
    let mut first = String::new();
    {
        let o = read(&s.observed);
        for (id, src) in o.model.sources.iter().enumerate() {
            for e in crate::output::watch::current(&o.model, id) {
                if let Ok(line) = crate::output::watch::json(&e, &src.info.short) {
                    first.push_str(&line);
                    first.push('\n');
                }
            }
        }
    }
    let head = futures::stream::once(async move { Ok::<Bytes, std::io::Error>(first.into()) });
    let tail = futures::stream::unfold(rx, |mut rx| async move {
        let line = match rx.recv().await {
            Ok(line) => format!("{line}\n"),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                format!("{{\"kind\":\"lagged\",\"missed\":{n}}}\n")
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<Bytes, std::io::Error>(line.into()), rx))
    });
    let body = Body::from_stream(futures::StreamExt::chain(head, tail));
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            value.parse().expect("a header value"),
        );
        h
    }

    #[test]
    fn gzip_only_when_the_scraper_asks_for_it() {
        assert!(!accepts_gzip(&HeaderMap::new()));
        // What Prometheus sends.
        assert!(accepts_gzip(&with("gzip")));
        assert!(accepts_gzip(&with("deflate, GZIP;q=0.5, br")));
        assert!(accepts_gzip(&with("*")));
        assert!(!accepts_gzip(&with("identity")));
        assert!(!accepts_gzip(&with("br, deflate")));
        assert!(!accepts_gzip(&with("gzip;q=0")));
        assert!(!accepts_gzip(&with("gzip; q=0.0, *")));
        assert!(!accepts_gzip(&with("*;q=0")));
    }
}
