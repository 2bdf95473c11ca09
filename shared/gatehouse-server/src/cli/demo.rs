//! The demo's place (ADR 48): its passwords are published, so it is seeded only into the
//! embedded store of a server nothing else can reach (listening on loopback, with no public
//! URL elsewhere), such a store is never served elsewhere, and `gatehouse demo remove` empties
//! it so that real workspaces may be made there. The data folder's lock keeps the removal from
//! pulling the files from under a running `serve` or `stdio`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Subcommand;

use super::StoreArgs;

#[derive(Debug, Subcommand)]
pub(crate) enum DemoCommand {
    /// Deletes the demo's workspaces, members, connections and operator: empties this data
    /// folder's store, which holds nothing else, so that real workspaces may be made in it.
    /// Stop every `gatehouse serve` and `stdio` on the folder first.
    Remove,
}

/// The name of the lock file in the data folder.
const LOCK: &str = "gatehouse.lock";

/// The files of the embedded store and the demo's token list, in the data folder.
const FILES: [&str; 6] = [
    "gatehouse.db",
    "gatehouse.db-wal",
    "gatehouse.db-shm",
    "gatehouse-gates.mdb",
    "gatehouse-gates.mdb-lock",
    "demo-connections.json",
];

/// A shared hold on the data folder, kept by `serve` and `stdio` while they run.
#[derive(Debug)]
pub(crate) struct FolderInUse(#[expect(dead_code, reason = "held for its lock")] std::fs::File);

/// Takes a shared hold on the data folder (waiting while a removal runs).
pub(crate) fn hold(data_dir: &Path) -> anyhow::Result<FolderInUse> {
    let file = lock_file(data_dir)?;
    file.lock_shared()
        .with_context(|| format!("locking {}", data_dir.join(LOCK).display()))?;
    Ok(FolderInUse(file))
}

fn lock_file(data_dir: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("making {}", data_dir.display()))?;
    let path = data_dir.join(LOCK);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Why `serve` must not seed the demo here, when it must not: a store other than the
/// embedded one (a table or an edge deployment others reach), or a server others can reach.
pub(crate) fn why_not_seeded(
    embedded: bool,
    local: SocketAddr,
    public_url: Option<&str>,
) -> Option<String> {
    if !embedded {
        return Some(
            "the demo is seeded only into the embedded store of this machine, not a shared one"
                .into(),
        );
    }
    if !local.ip().is_loopback() {
        return Some(format!(
            "the demo's passwords are published, so it is seeded only for a server listening on \
             loopback (127.0.0.1), not {local}"
        ));
    }
    match public_url {
        Some(url) if !is_loopback_url(url) => Some(format!(
            "the demo's passwords are published, so it is not seeded for a server others reach \
             at {url}"
        )),
        _ => None,
    }
}

/// Refuses to serve a store holding the demo where others can reach it.
pub(crate) async fn refuse_demo_reachable(
    store: &dyn store::Store,
    why_not: Option<&str>,
) -> anyhow::Result<()> {
    let Some(why) = why_not else {
        return Ok(());
    };
    if accounts::demo::holds_demo(store).await? {
        bail!(
            "this store holds the demo, whose passwords are published, and {why}: serve it on \
             127.0.0.1 only, or remove the demo first with `gatehouse demo remove`"
        );
    }
    Ok(())
}

/// Whether `url`'s host is a loopback name or address.
fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) async fn run(args: &StoreArgs, command: &DemoCommand) -> anyhow::Result<()> {
    let DemoCommand::Remove = command;
    if args.edge_url.is_some() || args.dynamodb_table.is_some() {
        bail!("the demo lives only in an embedded store (a data folder): nothing to remove here");
    }
    let data_dir = args.data_dir();
    remove(&data_dir).await
}

async fn remove(data_dir: &Path) -> anyhow::Result<()> {
    let file = data_dir.join("gatehouse.db");
    if !file.exists() {
        bail!("no gatehouse data at {}: nothing to remove", file.display());
    }
    let store = store_sqlite::SqliteStore::open(&file)
        .with_context(|| format!("opening {}", file.display()))?;
    let held = accounts::demo::holds_demo(&store).await?;
    drop(store);
    if !held {
        bail!(
            "the store at {} holds no demo: nothing was removed",
            data_dir.display()
        );
    }
    let lock = lock_file(data_dir)?;
    if lock.try_lock().is_err() {
        bail!(
            "a gatehouse serve or stdio is using {}: stop it, then run this again",
            data_dir.display()
        );
    }
    let removed: Vec<PathBuf> = FILES
        .iter()
        .map(|name| data_dir.join(name))
        .filter(|path| path.exists())
        .collect();
    for path in &removed {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    let store = store_sqlite::SqliteStore::open(&file)
        .with_context(|| format!("opening {}", file.display()))?;
    accounts::demo::claim(
        &store,
        &outside::SystemClock,
        accounts::demo::state::REMOVED,
    )
    .await?;
    println!(
        "removed the demo from {}: its workspaces, members, connections and operator are gone, \
         and it is never seeded there again. Make your own workspace with `gatehouse tenant \
         create`.",
        data_dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_server_on_its_own_store_seeds() {
        let loopback: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let everywhere: SocketAddr = "0.0.0.0:8787".parse().unwrap();
        assert_eq!(why_not_seeded(true, loopback, None), None);
        assert_eq!(
            why_not_seeded(true, loopback, Some("http://localhost:8787")),
            None
        );
        assert_eq!(
            why_not_seeded(true, loopback, Some("http://[::1]:8787")),
            None
        );
        assert!(why_not_seeded(true, everywhere, None).is_some());
        assert!(why_not_seeded(false, loopback, None).is_some());
        assert!(why_not_seeded(true, loopback, Some("https://gh.example.com")).is_some());
        assert!(why_not_seeded(true, loopback, Some("http://192.168.1.5:8787")).is_some());
    }
}
