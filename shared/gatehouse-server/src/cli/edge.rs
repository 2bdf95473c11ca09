//! `gatehouse edge`: what only an edge deployment (`--edge-url`) has: the items of its store
//! objects written out and read back (a backup and its restore), and the move of a deployment
//! made before ADR 51, whose one object held every item, into one object per workspace.

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;
use store::remote::ExportRow;

/// What `gatehouse edge` does.
#[derive(Debug, Subcommand)]
pub(crate) enum EdgeCommand {
    /// Writes every item of the deployment's store objects (the global one and each listed
    /// workspace's, or with --tenant that workspace's only) to stdout as JSON Lines, every
    /// attribute kept, `expires_at` included.
    Export {
        /// Only this workspace's object.
        #[arg(long, value_parser = crate::cli::tenant_id)]
        tenant: Option<store::TenantId>,
    },
    /// Reads JSON Lines written by `edge export` on stdin and writes each item into its
    /// object; an item already at its key is left as it is (and counted).
    Import,
    /// Copies every item of a deployment made before ADR 51 (one object, `store`, held them
    /// all) into the object it now belongs in; run once after deploying this version. The old
    /// object is left as it was; run again, it copies nothing twice.
    MoveFromOneObject,
}

/// One line of an export: the object it came from and the item.
#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    object: String,
    #[serde(flatten)]
    row: ExportRow,
}

/// Runs `command` on the edge deployment `endpoint` names (none: the command needs one).
pub(crate) async fn run(
    endpoint: Option<&store_http::Endpoint>,
    store: Arc<dyn store::Store>,
    command: EdgeCommand,
) -> anyhow::Result<()> {
    let endpoint = endpoint.context(
        "gatehouse edge works on an edge deployment: pass --edge-url (and its admin token in \
         GATEHOUSE_EDGE_ADMIN_TOKEN)",
    )?;
    let admin = store_http::Admin::new(endpoint.clone())?;
    match command {
        EdgeCommand::Export { tenant } => export(&admin, &store, tenant.as_ref()).await,
        EdgeCommand::Import => import(&admin).await,
        EdgeCommand::MoveFromOneObject => move_from_one_object(&admin).await,
    }
}

/// The objects an export reads: the global one and each listed workspace's, or one
/// workspace's.
async fn objects(
    store: &Arc<dyn store::Store>,
    tenant: Option<&store::TenantId>,
) -> anyhow::Result<Vec<String>> {
    if let Some(tenant) = tenant {
        return Ok(vec![format!("t:{tenant}")]);
    }
    let mut objects = vec!["global".to_owned()];
    for (id, _) in accounts::workspaces::list(store).await? {
        objects.push(format!("t:{id}"));
    }
    Ok(objects)
}

async fn export(
    admin: &store_http::Admin,
    store: &Arc<dyn store::Store>,
    tenant: Option<&store::TenantId>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let mut count = 0_u64;
    for object in objects(store, tenant).await? {
        admin
            .export(&object, |rows| {
                for row in rows {
                    let line = Line {
                        object: object.clone(),
                        row,
                    };
                    let text = serde_json::to_string(&line)
                        .map_err(|e| store::StoreError::Unavailable(e.to_string()))?;
                    writeln!(out, "{text}")
                        .map_err(|e| store::StoreError::Unavailable(format!("stdout: {e}")))?;
                    count += 1;
                }
                Ok(())
            })
            .await?;
    }
    out.flush()?;
    eprintln!("exported {count} items");
    Ok(())
}

async fn import(admin: &store_http::Admin) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for (number, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&line)
            .with_context(|| format!("line {} is not a line of `edge export`", number + 1))?;
        rows.push(line.row);
    }
    // Every line is read and checked before anything is written.
    let imported = admin.import(rows).await?;
    println!(
        "{} items written, {} already there (left as they were)",
        imported.written, imported.present
    );
    Ok(())
}

async fn move_from_one_object(admin: &store_http::Admin) -> anyhow::Result<()> {
    let (found, imported) = admin.move_from_one_object().await?;
    println!(
        "{found} items in the deployment's one object: {} copied into their objects, {} there already",
        imported.written, imported.present
    );
    Ok(())
}
