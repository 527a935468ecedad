//! A throwaway Prometheus and Alertmanager (Debian's `prometheus` and
//! `prometheus-alertmanager` binaries from PATH) for the tests of `electop serve`'s metrics
//! and the shipped alert rules.
//!
//! Each server gets its own temp dir (config, data, log) and a free loopback port, so tests
//! can run in parallel; neither talks to anything but 127.0.0.1 (Alertmanager's gossip is
//! off). Both are ready once `GET /-/ready` answers 200, and are killed on drop.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;
use serde_json::Value;

use super::http;
use super::process::{kill_and_reap, log_tail, port_clash, terminate};
use super::{POLL_INTERVAL, free_port, wait_for};

/// How long `start` waits for `/-/ready`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Grace period between SIGTERM and SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the test Prometheus scrapes its targets and evaluates its rules: quick, so a
/// test waits seconds rather than minutes for an alert.
pub const SCRAPE_INTERVAL: &str = "1s";
pub const EVALUATION_INTERVAL: &str = "1s";
/// The job name the scrape targets get (the `job` label of their series).
pub const JOB: &str = "electop";

const START_MARKER: &str = "--- electop test harness: starting";
const ATTEMPTS: u32 = 3;

/// One of the two daemons: its process, dir and port, and how to name it in failures.
struct Daemon {
    name: &'static str,
    child: Option<Child>,
    dir: Scratch,
    port: u16,
}

enum NotReady {
    Exited(ExitStatus),
    TimedOut(String),
}

impl Daemon {
    /// Writes `config` into a fresh temp dir, then runs `program` with the args `args(dir,
    /// port)` gives until it is ready, picking another port if it lost a port race.
    fn start(
        name: &'static str,
        program: &str,
        config: &str,
        args: impl Fn(&Path, u16) -> Vec<String>,
    ) -> Daemon {
        let dir = super::scratch::with_prefix(&format!("electop-{name}-"));
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config)
            .unwrap_or_else(|e| panic!("write {}: {e}", config_path.display()));
        for attempt in 1..=ATTEMPTS {
            let port = free_port();
            let mut child = spawn(program, dir.path(), port, &args(dir.path(), port));
            match wait_ready(&mut child, port) {
                Ok(()) => {
                    return Daemon {
                        name,
                        child: Some(child),
                        dir,
                        port,
                    };
                }
                Err(NotReady::Exited(_))
                    if attempt < ATTEMPTS && port_clash(&dir.path().join("log"), START_MARKER) =>
                {
                    let _ = std::fs::remove_dir_all(dir.path().join("data"));
                }
                Err(err) => {
                    kill_and_reap(&mut child);
                    let what = match err {
                        NotReady::Exited(status) => format!("exited early ({status})"),
                        NotReady::TimedOut(why) => {
                            format!("not ready after {READY_TIMEOUT:?} ({why})")
                        }
                    };
                    panic!(
                        "{name} {what} on 127.0.0.1:{port}; config:\n{config}\ntail of its log:\n{}",
                        log_tail(&dir.path().join("log"), 40)
                    );
                }
            }
        }
        unreachable!("the last attempt either returns or panics")
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// GET `path` and parse its body as JSON; Err says why not (for pollers).
    fn get_json(&self, path: &str) -> Result<Value, String> {
        let resp = http::get(&self.address(), path)?;
        let json: Value = serde_json::from_str(&resp.body).map_err(|e| {
            format!(
                "{} GET {path}: {} with a body that is not JSON ({e}): {}",
                self.name, resp.status, resp.body
            )
        })?;
        if resp.status != 200 {
            return Err(format!("{} GET {path}: {}: {json}", self.name, resp.status));
        }
        Ok(json)
    }

    /// GET `path` as JSON, panicking with the reason and the log tail if it fails.
    fn must_get_json(&self, path: &str) -> Value {
        self.get_json(path).unwrap_or_else(|why| {
            panic!(
                "{why}\ntail of the {} log:\n{}",
                self.name,
                log_tail(&self.dir.path().join("log"), 20)
            )
        })
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, "-TERM", STOP_TIMEOUT);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }
}

/// `program args...` with stdout and stderr appended to `dir/log`, after a start marker (so
/// a port clash is read from this start only).
fn spawn(program: &str, dir: &Path, port: u16, args: &[String]) -> Child {
    let log_path = dir.join("log");
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", log_path.display()));
    let _ = writeln!(log, "{START_MARKER} {program} on port {port} ---");
    let stderr = log.try_clone().expect("clone log file handle");
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("spawn {program}: {e} (is it installed? run scripts/install-deps.sh)")
        })
}

/// Polls `GET /-/ready` until it answers 200, the process exits or the deadline passes.
fn wait_ready(child: &mut Child, port: u16) -> Result<(), NotReady> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let addr = format!("127.0.0.1:{port}");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotReady::Exited(status));
        }
        let why = match http::get(&addr, "/-/ready") {
            Ok(resp) if resp.status == 200 => return Ok(()),
            Ok(resp) => format!("/-/ready answered {}: {}", resp.status, resp.body.trim()),
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut(why));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// A JSON string, which is also a YAML scalar: paths and targets need no further quoting.
fn yaml_str(s: &str) -> String {
    Value::from(s).to_string()
}

/// A running Alertmanager on 127.0.0.1 with one receiver that sends nowhere: the alerts it
/// holds are read back through its API.
pub struct Alertmanager {
    daemon: Daemon,
}

/// One route to one receiver without integrations; groups are sent after 1 s.
const ALERTMANAGER_CONFIG: &str = "\
route:
  receiver: tests
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: tests
";

impl Alertmanager {
    /// Starts Alertmanager and waits (up to 15 s) until `/-/ready` answers 200. Panics with
    /// the tail of its log if it does not.
    pub fn start() -> Alertmanager {
        let daemon = Daemon::start(
            "alertmanager",
            "prometheus-alertmanager",
            ALERTMANAGER_CONFIG,
            |dir, port| {
                vec![
                    format!("--config.file={}", dir.join("config.yml").display()),
                    format!("--storage.path={}", dir.join("data").display()),
                    format!("--web.listen-address=127.0.0.1:{port}"),
                    // No gossip: a lone instance that opens no cluster port.
                    "--cluster.listen-address=".to_string(),
                    "--log.level=warn".to_string(),
                ]
            },
        );
        Alertmanager { daemon }
    }

    /// "127.0.0.1:PORT", the form Prometheus's `alertmanagers` targets take.
    pub fn address(&self) -> String {
        self.daemon.address()
    }

    /// The alerts it holds now (`GET /api/v2/alerts`): an array of objects with `labels`,
    /// `annotations`, `status.state`...
    pub fn alerts(&self) -> Vec<Value> {
        match self.daemon.must_get_json("/api/v2/alerts") {
            Value::Array(alerts) => alerts,
            other => panic!("alertmanager /api/v2/alerts is not an array: {other}"),
        }
    }

    /// The `alertname`s of the alerts it holds now, sorted.
    pub fn alert_names(&self) -> Vec<String> {
        alert_names(&self.alerts())
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.daemon.dir.path().join("log"), lines)
    }

    /// Graceful stop: SIGTERM, then SIGKILL after 5 s. No-op if stopped.
    pub fn stop(&mut self) {
        self.daemon.stop();
    }
}

/// A running Prometheus on 127.0.0.1 scraping `scrape_targets` (job `electop`) every second,
/// evaluating `rule_files` every second and sending alerts to an Alertmanager if given.
pub struct Prometheus {
    daemon: Daemon,
}

impl Prometheus {
    /// Starts Prometheus and waits (up to 15 s) until `/-/ready` answers 200 (the rules are
    /// loaded by then: a rule file it rejects makes it exit, and this panic with its log).
    /// `scrape_targets` are "HOST:PORT"; `rule_files` are read where they are.
    pub fn start(
        scrape_targets: &[String],
        rule_files: &[PathBuf],
        alertmanager: Option<&Alertmanager>,
    ) -> Prometheus {
        let config = prometheus_config(scrape_targets, rule_files, alertmanager);
        let daemon = Daemon::start("prometheus", "prometheus", &config, |dir, port| {
            vec![
                format!("--config.file={}", dir.join("config.yml").display()),
                format!("--storage.tsdb.path={}", dir.join("data").display()),
                format!("--web.listen-address=127.0.0.1:{port}"),
                // Firing alerts are sent again every second, not every minute: the first
                // send can come before the Alertmanager target is discovered, and a test
                // should not wait a minute for the next one.
                "--rules.alert.resend-delay=1s".to_string(),
                "--log.level=warn".to_string(),
            ]
        });
        Prometheus { daemon }
    }

    /// "127.0.0.1:PORT".
    pub fn address(&self) -> String {
        self.daemon.address()
    }

    /// The `data.result` of an instant query (`GET /api/v1/query`): for a vector, an array
    /// of `{"metric": {...}, "value": [time, "v"]}`. Panics if Prometheus rejects `promql`.
    pub fn query(&self, promql: &str) -> Value {
        self.try_query(promql)
            .unwrap_or_else(|why| panic!("{why}\ntail of the log:\n{}", self.log_tail(20)))
    }

    fn try_query(&self, promql: &str) -> Result<Value, String> {
        let path = format!("/api/v1/query?query={}", http::query_escape(promql));
        let json = self.daemon.get_json(&path)?;
        if json["status"] != "success" {
            return Err(format!("query {promql:?} failed: {json}"));
        }
        Ok(json["data"]["result"].clone())
    }

    /// Polls `query(promql)` until `pred` holds on its result, and returns that result; after
    /// `timeout` panics naming the query and the last result seen.
    pub fn wait_query(
        &self,
        promql: &str,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Value {
        wait_for(
            &format!("query {promql:?} answers as expected"),
            timeout,
            || {
                let result = self.try_query(promql)?;
                if pred(&result) {
                    Ok(result)
                } else {
                    Err(format!("last result: {result}"))
                }
            },
        )
    }

    /// The alerts its rules hold now, pending or firing (`GET /api/v1/alerts`): objects with
    /// `labels`, `annotations`, `state`, `activeAt`, `value`.
    pub fn alerts(&self) -> Vec<Value> {
        let json = self.daemon.must_get_json("/api/v1/alerts");
        match &json["data"]["alerts"] {
            Value::Array(alerts) => alerts.clone(),
            _ => panic!("prometheus /api/v1/alerts has no data.alerts array: {json}"),
        }
    }

    /// The `alertname`s of its alerts in `state` ("firing" or "pending"), sorted.
    pub fn alert_names(&self, state: &str) -> Vec<String> {
        let alerts: Vec<Value> = self
            .alerts()
            .into_iter()
            .filter(|a| a["state"] == state)
            .collect();
        alert_names(&alerts)
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.daemon.dir.path().join("log"), lines)
    }

    /// Graceful stop: SIGTERM, then SIGKILL after 5 s. No-op if stopped.
    pub fn stop(&mut self) {
        self.daemon.stop();
    }
}

/// The sorted `labels.alertname`s of `alerts` (either API's alert objects).
fn alert_names(alerts: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = alerts
        .iter()
        .filter_map(|a| a["labels"]["alertname"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// prometheus.yml: 1 s scrapes and evaluations, one static job, the rule files, and the
/// Alertmanager if any.
fn prometheus_config(
    scrape_targets: &[String],
    rule_files: &[PathBuf],
    alertmanager: Option<&Alertmanager>,
) -> String {
    let mut config = format!(
        "global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  scrape_timeout: {SCRAPE_INTERVAL}\n  \
         evaluation_interval: {EVALUATION_INTERVAL}\n"
    );
    config.push_str("rule_files:\n");
    for file in rule_files {
        let path = file.canonicalize().unwrap_or_else(|_| file.clone());
        config.push_str(&format!("  - {}\n", yaml_str(&path.display().to_string())));
    }
    if let Some(am) = alertmanager {
        config.push_str(&format!(
            "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [{}]\n",
            yaml_str(&am.address())
        ));
    }
    let targets: Vec<String> = scrape_targets.iter().map(|t| yaml_str(t)).collect();
    config.push_str(&format!(
        "scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    ));
    config
}
