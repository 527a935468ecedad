//! `electop serve`: the flags checked (a mistake is exit 2 before anything starts), then the
//! headless observer runs until SIGTERM.

use std::process::ExitCode;

use anyhow::Result;

use super::Usage;
use crate::backend::BackendOptions;
use crate::cli::ServeArgs;
use crate::config::Selected;
use crate::serve::{Options, auth};

pub(super) async fn run(
    args: ServeArgs,
    selected: Selected,
    opts: BackendOptions,
    reload: crate::serve::Reload,
) -> Result<ExitCode> {
    let a = auth::Auth::load(
        args.bearer_token_file.as_deref(),
        args.basic_auth_file.as_deref(),
    )
    .map_err(Usage)?;
    auth::check_exposure(args.listen, &a).map_err(Usage)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(auth::tls(cert, key).map_err(Usage)?),
        _ => None,
    };
    let hooks = crate::serve_hooks::HookConfig {
        on_change: args.on_change,
        webhooks: args.webhook,
        timeout: args.hook_timeout,
        ..crate::serve_hooks::HookConfig::default()
    };
    let o = Options {
        listen: args.listen,
        context: selected.context,
        auth: a,
        tls,
        hooks,
    };
    crate::serve::run(&selected.sources, opts, o, reload).await?;
    Ok(ExitCode::SUCCESS)
}
