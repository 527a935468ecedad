//! The `[ui]` and `[history]` sections.

use serde::Deserialize;

use super::duration::duration;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// Redraw interval while a countdown is visible, in milliseconds.
    pub tick_ms: u64,
    /// An election whose leader changed more than this many times in the last minute is
    /// flagged as flapping.
    pub flap_per_min: u32,
    /// At most this many frames a second on average, however fast the stores change:
    /// changes arriving in between are drawn together (see `runtime::pacing::Pacer`).
    pub max_fps: u32,
}

impl UiConfig {
    /// The shortest time between two frames.
    pub fn min_frame(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1) / self.max_fps.clamp(1, 1000)
    }
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            tick_ms: 100,
            flap_per_min: 4,
            max_fps: 30,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Leader changes kept per election (replayed from etcd and seen live); 0 turns replay off.
    pub limit: usize,
    /// How long an election whose last candidate left stays listed, e.g. "10m".
    #[serde(deserialize_with = "duration")]
    pub retention: std::time::Duration,
    /// Records of the history older than this are deleted, e.g. "7d".
    #[serde(deserialize_with = "duration")]
    pub journal_retention: std::time::Duration,
    /// Past this size in use, the history database deletes its oldest half, e.g. "64MiB".
    #[serde(deserialize_with = "super::duration::size")]
    pub journal_max_size: u64,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            limit: 200,
            retention: std::time::Duration::from_secs(600),
            journal_retention: std::time::Duration::from_secs(7 * 86_400),
            journal_max_size: 64 << 20,
        }
    }
}

/// `[serve]`: what `electop serve` runs on each change, when the flags do not say.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// `sh -c` command per leader change or alarm (`--on-change`).
    pub on_change: Option<String>,
    /// URLs each change is POSTed to (`--webhook`).
    pub webhooks: Vec<String>,
    /// How long a hook run or webhook attempt may take, e.g. "10s" (`--hook-timeout`).
    #[serde(deserialize_with = "super::duration::duration_opt")]
    pub hook_timeout: Option<std::time::Duration>,
}
