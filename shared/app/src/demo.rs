//! The demo (ADR 49): the product's demo workspaces, each with a member of every role the
//! product names and its records, one connection per workspace, role and toolset, and an
//! operator, so that a newcomer can try the server (and cross-tenant isolation) by hand.
//! Seeded once, into an empty store. The platform makes the workspaces, members, connections
//! and the operator; the product seeds its records ([`Demo::seed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use identity::{Channel, NewConnection};
use mcp_pipeline::Toolset;
use serde::Serialize;
use store::Store;

use crate::App;

/// One demo connection and its token.
#[derive(Debug, Clone, Serialize)]
pub struct DemoConnection {
    /// The tenant.
    pub tenant: String,
    /// The member who owns the connection (it acts as them, and ends when they are removed):
    /// the first member for roles that may not make connections of their own.
    pub member: String,
    /// The role whose rights the connection has.
    pub role: String,
    /// The toolset.
    pub toolset: String,
    /// The connection id.
    pub connection: String,
    /// The MCP token.
    pub token: String,
}

/// The sign-in password of every demo member (documented in the README; demo data only).
pub const DEMO_PASSWORD: &str = "gatehouse-demo";

/// The demo operator's email (signs in at `/app/operator/login` with [`DEMO_PASSWORD`]; may
/// set the global kill switch, sees no tenant).
pub const DEMO_OPERATOR: &str = "operator@gatehouse.test";

/// Why seeding failed.
pub type DemoError = Box<dyn std::error::Error + Send + Sync>;

/// A demo workspace.
#[derive(Debug, Clone, Copy)]
pub struct DemoWorkspace {
    /// Its id.
    pub id: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Its IANA zone.
    pub zone: &'static str,
    /// The product's settings of it ([`crate::Product::workspace_settings`]), by name.
    pub settings: &'static [(&'static str, &'static str)],
}

/// What the product's seed of one workspace is handed.
#[derive(Debug, Clone)]
pub struct DemoSeed {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The workspace, made already, with its members.
    pub workspace: DemoWorkspace,
    /// The seed's time (the caller's clock: the system's, or a test's).
    pub now: DateTime<Utc>,
}

/// A product's demo.
#[derive(Debug, Clone, Copy)]
pub struct Demo {
    /// Its workspaces.
    pub workspaces: &'static [DemoWorkspace],
    /// The members of each workspace and their roles (each signs in with [`DEMO_PASSWORD`]).
    /// The first makes the connections of members whose role may not make their own.
    pub members: &'static [(&'static str, &'static str)],
    /// The role whose standard-toolset tokens `serve` prints to connect a client with: an
    /// everyday agent's, neither an owner's nor a viewer's.
    pub shown_role: &'static str,
    /// Seeds the product's records into one workspace.
    pub seed: fn(DemoSeed) -> BoxFuture<'static, Result<(), DemoError>>,
}

/// What the demo seed found and did.
#[derive(Debug)]
pub enum Seeded {
    /// Seeded now: the connections it made.
    Now(Vec<DemoConnection>),
    /// Seeded by an earlier start.
    Before,
    /// An earlier start began seeding at `started_at` and has not finished: it was stopped half
    /// way (its workspaces may be incomplete), or it is still running in another process.
    Unfinished {
        /// When that start began (RFC 3339).
        started_at: String,
    },
    /// The store held workspaces or operators of its own at its first start: a store in use,
    /// where a demo operator with a published password and made-up customers have no place.
    NotEmpty,
    /// The product has no demo.
    NoDemo,
    /// An earlier start was told not to seed (`serve --no-demo`).
    Declined,
    /// The demo was seeded and removed (`gatehouse demo remove`).
    Removed,
}

/// Seeds the demo data into an empty store, once: a store without the demo's marker, without
/// a workspace and without an operator. `now` is handed to the product's seed (the caller's clock: the
/// system's, or a test's). The marker is claimed first (so that two processes starting at once
/// seed once), and marks the store as the demo's: no real workspace or operator is made beside
/// it (`accounts::demo`). Where the demo may be seeded is the caller's rule (`serve`: only its
/// embedded store, only on loopback).
pub async fn seed_if_empty(app: &App, now: DateTime<Utc>) -> Result<Seeded, DemoError> {
    use accounts::demo::state;
    let Some(demo) = app.product.demo() else {
        return Ok(Seeded::NoDemo);
    };
    if !accounts::demo::claim(app.store.as_ref(), app.web.clock.as_ref(), state::SEEDING).await? {
        return earlier_seed(app).await;
    }
    // Checked once the marker is ours, so that nothing made meanwhile is missed; a store in
    // use stays unseeded at every later start too.
    if in_use(app).await? {
        accounts::demo::set_state(app.store.as_ref(), state::IN_USE).await?;
        return Ok(Seeded::NotEmpty);
    }
    let mut connections = Vec::new();
    for workspace in demo.workspaces {
        seed_workspace(app, &demo, workspace).await?;
        let seed = DemoSeed {
            store: Arc::clone(&app.store),
            workspace: *workspace,
            now,
        };
        (demo.seed)(seed).await?;
        connections.extend(demo_connections(app, &demo, workspace).await?);
    }
    let seeder = identity::Actor {
        tenant: identity::system(),
        member: store::MemberId::new("demo seed"),
        channel: Channel::Cli,
    };
    let (email, password) = (DEMO_OPERATOR, DEMO_PASSWORD);
    accounts::operators::create_in_demo(
        app.store.as_ref(),
        &app.web.outside(),
        &seeder,
        email,
        password,
    )
    .await?;
    accounts::demo::set_state(app.store.as_ref(), state::DONE).await?;
    Ok(Seeded::Now(connections))
}

/// Whether the store holds anything of its own: a workspace or an operator.
async fn in_use(app: &App) -> Result<bool, DemoError> {
    Ok(!accounts::workspaces::list(&app.store).await?.is_empty()
        || accounts::operators::any(app.store.as_ref()).await?)
}

/// Records that this store is not to be seeded (`serve --no-demo`), so that a later start
/// without the flag does not seed it either; a store seeded before keeps its marker.
pub async fn decline(app: &App) -> Result<(), DemoError> {
    accounts::demo::claim(
        app.store.as_ref(),
        app.web.clock.as_ref(),
        accounts::demo::state::DECLINED,
    )
    .await?;
    Ok(())
}

/// What an earlier start's marker says.
async fn earlier_seed(app: &App) -> Result<Seeded, DemoError> {
    use accounts::demo::state;
    let (state, started_at) = accounts::demo::marker(app.store.as_ref())
        .await?
        .unwrap_or_default();
    Ok(match state.as_str() {
        state::SEEDING => Seeded::Unfinished { started_at },
        state::DECLINED => Seeded::Declined,
        state::REMOVED => Seeded::Removed,
        state::IN_USE => Seeded::NotEmpty,
        _ => Seeded::Before,
    })
}

/// The workspace with the product's settings and its members (audited, as `gatehouse tenant
/// create` and `member set` do it).
async fn seed_workspace(app: &App, demo: &Demo, w: &DemoWorkspace) -> Result<(), DemoError> {
    let workspace = accounts::workspaces::Workspace {
        id: w.id.into(),
        name: w.name.into(),
        zone: w.zone.into(),
    };
    let settings: BTreeMap<String, String> = w
        .settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let tenant = store::TenantId::new(w.id);
    let ops = app.product.new_workspace(&tenant, &settings)?;
    let seeding = identity::Actor {
        tenant,
        member: store::MemberId::new("demo seed"),
        channel: Channel::Cli,
    };
    accounts::workspaces::create_in_demo(&app.store, &app.web.outside(), &seeding, &workspace, ops)
        .await?;
    for (member, role) in demo.members {
        let member = store::MemberId::new(*member);
        app.members.set(&seeding, &member, role, Some(true)).await?;
        app.members
            .set_password(&seeding, &member, DEMO_PASSWORD)
            .await?;
    }
    Ok(())
}

/// A connection per role and toolset, made by the member (or the first member, for members
/// who may not create connections), with the role's rights.
async fn demo_connections(
    app: &App,
    demo: &Demo,
    w: &DemoWorkspace,
) -> Result<Vec<DemoConnection>, DemoError> {
    let roles = app.product.roles();
    let first = demo.members.first().map_or("", |(m, _)| *m);
    let mut connections = Vec::new();
    for (member, role) in demo.members {
        for toolset in [Toolset::Core, Toolset::Standard, Toolset::Full] {
            let rights: BTreeSet<String> = roles(role).iter().map(|r| (*r).to_owned()).collect();
            let creator = if rights.contains(identity::connection::MANAGE_CONNECTIONS) {
                member
            } else {
                first
            };
            let actor = identity::Actor {
                tenant: store::TenantId::new(w.id),
                member: store::MemberId::new(creator),
                channel: Channel::Cli,
            };
            let new = NewConnection {
                rights,
                toolset,
                client_name: format!("demo {role} {}", toolset.as_str()),
                approval: mcp_pipeline::ApprovalMode::Client,
            };
            let (connection, token) = app.connections.create_token(&actor, new).await?;
            connections.push(DemoConnection {
                tenant: w.id.into(),
                // The connection is the creator's: it acts as them and ends with them.
                member: creator.into(),
                role: (*role).into(),
                toolset: toolset.as_str().into(),
                connection: connection.id.into_string(),
                token,
            });
        }
    }
    Ok(connections)
}
