//! `electop serve`'s own flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::parse_duration;

/// `electop serve`'s own flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen.
    ///
    /// Anything but loopback needs --bearer-token-file or --basic-auth-file.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9477")]
    pub listen: std::net::SocketAddr,
    /// Require the bearer token in FILE.
    ///
    /// Requests must carry `Authorization: Bearer <the file's first line>`.
    #[arg(long, value_name = "FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// Require basic auth (user:password in FILE).
    ///
    /// HTTP basic auth with the file's first line, `user:password`.
    #[arg(long, value_name = "FILE")]
    pub basic_auth_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM).
    ///
    /// With --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Run CMD for each leader change or alarm.
    ///
    /// Run with `sh -c`: the event as JSON on stdin and in ELECTOP_KIND, ELECTOP_SOURCE,
    /// ELECTOP_ELECTION, ELECTOP_FROM, ELECTOP_TO, ELECTOP_CAUSE, ELECTOP_AT. One at a
    /// time, in order.
    #[arg(long, value_name = "CMD")]
    pub on_change: Option<String>,
    /// POST each event as JSON to URL; repeatable.
    ///
    /// http://, with retries. Without --on-change/--webhook, the config's `[serve]` section
    /// says.
    #[arg(long, value_name = "URL")]
    pub webhook: Vec<String>,
    /// How long a hook or webhook may take.
    ///
    /// A hook run or a webhook attempt is cut off after it (default 10s, or `[serve]
    /// hook_timeout`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub hook_timeout: Option<Duration>,
    /// Log as text or json.
    ///
    /// Log lines on stderr as text, or as JSON objects.
    #[arg(
        long,
        value_name = "FORMAT",
        value_enum,
        default_value_t,
        hide_possible_values = true
    )]
    pub log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}
