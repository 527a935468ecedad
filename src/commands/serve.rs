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
    serve: &crate::config::ServeConfig,
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
    // The flags, or where they say nothing, the config's `[serve]`.
    let defaults = crate::serve_hooks::HookConfig::default();
    let flagged = args.on_change.is_some() || !args.webhook.is_empty();
    let (on_change, webhooks) = match flagged {
        true => (args.on_change, args.webhook),
        false => (serve.on_change.clone(), serve.webhooks.clone()),
    };
    let hooks = crate::serve_hooks::HookConfig {
        on_change,
        webhooks,
        timeout: args
            .hook_timeout
            .or(serve.hook_timeout)
            .unwrap_or(defaults.timeout),
        ..defaults
    };
    let o = Options {
        listen: args.listen,
        context: selected.context,
        auth: a,
        tls,
        hooks,
    };
    // On a worker thread, not on the thread waiting in `block_on`: the stores' tasks run
    // on the workers, and each event they sent woke that other thread (a futex wake and a
    // context switch per event: much of serve's CPU under churn). On a worker,
    // the task a send wakes is run next on the same thread.
    let run = crate::serve::run(selected.sources, opts, o, reload);
    tokio::spawn(run).await??;
    Ok(ExitCode::SUCCESS)
}
