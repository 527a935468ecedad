//! TEMPORARY stand-in until the hooks module lands (replaced by src/serve_hooks/).
#[derive(Default)]
pub struct HookConfig {
    pub on_change: Option<String>,
    pub webhooks: Vec<String>,
    pub timeout: std::time::Duration,
}
#[derive(Default, Debug)]
pub struct HookStats;
impl HookStats {
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
        Vec::new()
    }
}
pub struct Hooks;
impl Hooks {
    pub fn start(_: HookConfig, _: std::sync::Arc<HookStats>) -> Result<Hooks, String> {
        Ok(Hooks)
    }
    pub fn send(&self, _: &str) {}
    pub async fn drain(self, _: std::time::Duration) {}
}
