//! The outbox on one machine: `serve` sweeps it every few seconds, delivering to the log (or to
//! a webhook when `GATEHOUSE_WEBHOOK_URL` and `GATEHOUSE_WEBHOOK_SECRET` are set), and the
//! `outbox` commands deliver what is due, list the dead letters and requeue one (audited).

use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use identity::{Actor, Channel};

/// How often `serve` sweeps the outbox.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Subcommand)]
pub(crate) enum OutboxCommand {
    /// Delivers every message that is due now, then prints what happened.
    Dispatch,
    /// Lists the dead letters: messages that failed for good.
    Dead {
        /// Only this workspace's (required with --edge-url, where each workspace's object
        /// holds its own).
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: Option<store::TenantId>,
    },
    /// Puts a dead letter back in the queue (audited); the next sweep delivers it.
    Retry {
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: store::TenantId,
        /// The message id.
        id: String,
    },
}

impl OutboxCommand {
    /// The workspace the command acts in, if it names one.
    pub(crate) fn tenant(&self) -> Option<&store::TenantId> {
        match self {
            OutboxCommand::Retry { tenant, .. } => Some(tenant),
            OutboxCommand::Dead { tenant } => tenant.as_ref(),
            OutboxCommand::Dispatch => None,
        }
    }
}

/// The channel the environment names: a webhook, or the log.
fn channel() -> anyhow::Result<Arc<dyn outbox::Deliver>> {
    let variable = |name| std::env::var(name).ok();
    let webhook = outbox::WebhookSettings::from_variables(
        variable("GATEHOUSE_WEBHOOK_URL"),
        variable("GATEHOUSE_WEBHOOK_SECRET"),
    )
    .map_err(anyhow::Error::msg)?;
    let Some(webhook) = webhook else {
        return Ok(Arc::new(outbox::LogDelivery));
    };
    let clock: Arc<dyn outside::Clock> = Arc::new(outside::SystemClock);
    Ok(Arc::new(outbox::Webhook::new(
        &webhook.url,
        &webhook.secret,
        Duration::from_secs(10),
        clock,
    )?))
}

/// The dispatcher over `store` with the environment's channel.
pub(crate) fn dispatcher(store: Arc<dyn store::Store>) -> anyhow::Result<outbox::Dispatcher> {
    Ok(outbox::Dispatcher::new(store, channel()?))
}

/// Sweeps the outbox every few seconds for as long as the server runs.
pub(crate) fn spawn_sweeps(dispatcher: outbox::Dispatcher) {
    super::background::repeat("outbox sweep", SWEEP_EVERY, SWEEP_EVERY, move || {
        let dispatcher = dispatcher.clone();
        async move {
            match dispatcher.sweep().await {
                Ok(s) if s.delivered + s.retrying + s.dead > 0 => {
                    if let Some(metrics) = super::metrics::Metrics::active() {
                        metrics.swept(&s);
                    }
                    tracing::info!(
                        delivered = s.delivered,
                        retrying = s.retrying,
                        dead = s.dead,
                        "outbox swept"
                    );
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "outbox sweep failed; trying again soon"),
            }
        }
    });
}

/// Why `command` cannot run on an edge deployment, if it cannot: each workspace's store object
/// delivers its own messages from its alarm and holds its own dead letters (ADR 51).
fn refused_at_the_edge(command: &OutboxCommand) -> Option<&'static str> {
    match command {
        OutboxCommand::Dispatch => Some(
            "at the edge each workspace's store object delivers its own messages from its \
             alarm (ADR 51): there is nothing to dispatch from here",
        ),
        OutboxCommand::Dead { tenant: None } => Some(
            "at the edge each workspace's store object holds its own dead letters (ADR 51): \
             name the workspace with --tenant",
        ),
        OutboxCommand::Dead { .. } | OutboxCommand::Retry { .. } => None,
    }
}

/// Runs `command` on `store` (an edge deployment's when `at_the_edge`).
pub(crate) async fn run(
    store: Arc<dyn store::Store>,
    command: OutboxCommand,
    at_the_edge: bool,
) -> anyhow::Result<()> {
    if let Some(why) = refused_at_the_edge(&command).filter(|_| at_the_edge) {
        anyhow::bail!(why);
    }
    // Listing and requeueing deliver nothing: they neither need nor check the channel's
    // settings, so a dead letter can be looked at while the webhook is being set up.
    let dispatcher = match command {
        OutboxCommand::Dispatch => dispatcher(Arc::clone(&store))?,
        OutboxCommand::Dead { .. } | OutboxCommand::Retry { .. } => {
            outbox::Dispatcher::new(Arc::clone(&store), Arc::new(outbox::LogDelivery))
        }
    };
    match command {
        OutboxCommand::Dispatch => {
            let s = dispatcher.sweep().await?;
            println!(
                "delivered {}, retrying {}, dead {}, skipped {}",
                s.delivered, s.retrying, s.dead, s.skipped
            );
        }
        OutboxCommand::Dead { tenant } => {
            let dead = match tenant {
                Some(tenant) => dispatcher.dead_letters_of(&tenant).await?,
                None => dispatcher.dead_letters().await?,
            };
            if dead.is_empty() {
                // On stderr: the list on stdout stays empty for scripts.
                eprintln!("no dead letters: every message was delivered or is still being tried");
            }
            for m in dead {
                println!(
                    "{}\t{}\t{}\tattempts {}\t{}",
                    m.tenant,
                    m.id,
                    m.to,
                    m.attempts,
                    m.last_error.unwrap_or_default()
                );
            }
        }
        OutboxCommand::Retry { tenant, id } => {
            let console = Actor {
                tenant: tenant.clone(),
                member: store::MemberId::new("cli"),
                channel: Channel::Cli,
            };
            let ids = vec![id.clone()];
            let audit =
                identity::AuditEntry::by(&console, "outbox.retry", ids, &outside::SystemClock);
            let audit = audit.op(&outside::SystemRandomness);
            dispatcher.retry(&tenant, &id, vec![audit]).await?;
            println!("{tenant}/{id} is queued again; the next sweep delivers it");
        }
    }
    Ok(())
}
