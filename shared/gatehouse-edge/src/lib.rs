//! gatehouse at the edge: the MCP endpoint of any product on Cloudflare Workers (ADR 20, ADR 49).
//!
//! The same app as every other entry point (`app::build`: pipeline, credentials, gates, the
//! product's tools), built once per isolate on a [`store::remote::RemoteStore`] whose messages
//! go, per request ([`scope`]), to one Durable Object ([`StoreObject`]) that keeps the items in its SQLite database and
//! runs each operation alone ([`store::remote::serve`]). Time is the host's (`Date.now()`),
//! randomness the host's `crypto.getRandomValues`, the deadline timer `setTimeout`, and work
//! after the answer runs under the request's `waitUntil`.
//!
//! A product's Worker is a cdylib of a few lines: it re-exports [`StoreObject`] (the class its
//! `wrangler.toml` binds) and answers its `fetch` event with [`fetch`]:
//!
//! ```ignore
//! pub use gatehouse_edge::StoreObject;
//!
//! #[worker::event(fetch)]
//! async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
//!     gatehouse_edge::fetch(req, env, ctx, my_product::MyProduct::shared()).await
//! }
//! ```
//!
//! Routes: the MCP endpoint and its metadata, the product's pages and JSON API (`/app`,
//! `/api/`: the app's), `/healthz` ("ok", or only
//! "misconfigured" to the world, the problems in the log), and `POST /admin/store` ([`admin`]),
//! which hands a store message to the object: for the CLI with the deployment's admin token
//! (a secret; without it the route does not exist). The test build (`--features test-routes`,
//! `tests/edge.sh` only) opens it to the tests and lets each request pick its store object; no
//! variable does.
#![cfg(target_arch = "wasm32")]

mod admin;
mod assembly;
mod deliveries;
mod durable;
mod env;
mod faults;
mod keys;
mod logs;
mod mirror;
mod names;
mod objects;
mod scope;
mod sql_rows;
mod transaction;

use worker::{Context, Env, Request, Response, Result};

pub use durable::StoreObject;

/// Where store messages are posted (the CLI with the admin token; the tests).
const STORE_PATH: &str = "/admin/store";
/// Where the CLI asks how far a flip of the global switch has reached.
const SWITCH_PATH: &str = "/admin/switch";
/// Where the CLI reads a page of one object's items (a backup, a move).
const EXPORT_PATH: &str = "/admin/export";
/// Where the CLI writes items back, each into its object.
const IMPORT_PATH: &str = "/admin/import";

/// Answers one request of the Worker's `fetch` event for `product`.
///
/// # Errors
///
/// What the runtime reports as the request's failure (a body it cannot read, a store object
/// it cannot reach).
pub async fn fetch(
    req: Request,
    env: Env,
    ctx: Context,
    product: app::SharedProduct,
) -> Result<Response> {
    logs::install();
    match req.path().as_str() {
        "/healthz" => match assembly::check(&env) {
            Ok(()) => Response::ok("ok"),
            Err(problem) => misconfigured(&problem),
        },
        STORE_PATH => admin::handle(req, &env, admin::Ask::Store).await,
        SWITCH_PATH => admin::handle(req, &env, admin::Ask::SwitchStatus).await,
        EXPORT_PATH => admin::handle(req, &env, admin::Ask::Export).await,
        IMPORT_PATH => admin::handle(req, &env, admin::Ask::Import).await,
        // The app checks the settings once, when it is built for the isolate.
        _ => assembly::serve(req, env, ctx, product).await,
    }
}

/// The answer of a deployment whose settings are wrong: only that, to anyone; what is wrong goes
/// to the log, where the deployment's owner reads it.
pub(crate) fn misconfigured(problem: &str) -> Result<Response> {
    tracing::error!("misconfigured: {problem}");
    Response::error("misconfigured", 500)
}
