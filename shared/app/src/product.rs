//! The seam a product plugs into (ADR 49): one value of [`Product`] supplies everything the
//! platform needs from a product, and every entry point builds its app from one. The platform
//! never names a product's types; the booking product (`booking_product::Booking`) is built on
//! this seam like any other.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_pipeline::records::Records;
use mcp_pipeline::{NameResolver, Randomness, ReadAhead, Registry, RegistryError};
use store::{Store, TransactOp};

use crate::demo::Demo;

/// A setting a workspace of a product takes beside the platform's id, name and zone (a flag of
/// `gatehouse tenant create`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceSetting {
    /// Its name (`tax_rate`; the flag is `--tax-rate`).
    pub name: &'static str,
    /// What it is, with an example.
    pub help: &'static str,
    /// A value that works, for the commands the CLI prints to paste (`EUR`).
    pub example: &'static str,
}

/// What the platform hands a product when it registers its tools and services.
#[derive(Debug, Clone)]
pub struct ProductContext {
    /// The store, serving each call's read-ahead (the records its handles name, read with the
    /// credential) to the product's reads inside that call.
    pub store: Arc<dyn Store>,
    /// The store itself, for the product's pages and API (no call's read-ahead there).
    pub plain_store: Arc<dyn Store>,
    /// Where the product's pages are (ending in `/app`), for links in results.
    pub console_base: String,
    /// Where ids come from.
    pub randomness: Arc<dyn Randomness>,
}

/// A product behind gatehouse: its tools, rights, roles, records and texts.
pub trait Product: std::fmt::Debug + Send + Sync + 'static {
    /// A short name (`booking`), for logs.
    fn name(&self) -> &'static str;

    /// What clients are told this server exposes (the instructions of `initialize`).
    fn instructions(&self) -> String;

    /// Every right the product's tools and pages ask for, the platform's own among them
    /// (`connections:manage`, `agent_access:manage`, `audit:read`): OAuth's scopes.
    fn rights(&self) -> &'static [&'static str];

    /// What each of the product's roles grants; an unknown role grants nothing.
    fn roles(&self) -> identity::RoleCatalog;

    /// The right that reading the product's records takes: the platform's own reads that show
    /// them (the audit trail's changes) ask for it.
    fn read_right(&self) -> &'static str;

    /// Registers the product's tools, each with its decorators, in `tools/list` order.
    fn register(&self, registry: &mut Registry, cx: &ProductContext) -> Result<(), RegistryError>;

    /// Resolves a record's name where a handle belongs, when the product names records.
    fn names(&self, cx: &ProductContext) -> Option<Arc<dyn NameResolver>> {
        let _ = cx;
        None
    }

    /// The store keys of the records a call's handles name, read with its credential.
    fn read_ahead(&self) -> ReadAhead;

    /// The settings a new workspace of this product takes (none by default).
    fn workspace_settings(&self) -> &'static [WorkspaceSetting] {
        &[]
    }

    /// The writes that store a new workspace's settings (`settings`: each of
    /// [`Product::workspace_settings`] by name, as given), once they are checked; committed
    /// with the workspace. The error names what is wrong and how to give it.
    fn new_workspace(
        &self,
        tenant: &store::TenantId,
        settings: &BTreeMap<String, String>,
    ) -> Result<Vec<TransactOp>, String> {
        let _ = tenant;
        match settings.keys().next() {
            Some(name) => Err(format!("this product takes no workspace setting {name:?}")),
            None => Ok(Vec::new()),
        }
    }

    /// The product's records, whose pages tool results link to (none by default).
    fn records(&self, cx: &ProductContext) -> Option<Arc<dyn Records>> {
        let _ = cx;
        None
    }

    /// The product's JSON API under `/api` (none by default).
    fn api(&self, cx: &ProductContext) -> Option<Arc<dyn web::ProductApi>> {
        let _ = cx;
        None
    }

    /// The demo a local server seeds into an empty store (none by default).
    fn demo(&self) -> Option<Demo> {
        None
    }
}

/// A product shared by every part of an app.
pub type SharedProduct = Arc<dyn Product>;
