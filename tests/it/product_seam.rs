//! The product seam (ADR 49): what a product hands the platform beside its tools is checked
//! when the app is built, so that a mistake stops the start with its name instead of
//! surfacing as a wrong answer later.

use std::sync::Arc;

use crate::support::misdescribed::{Misdescribed, Mistake};

fn built(mistake: Mistake) -> Result<app::App, mcp_pipeline::RegistryError> {
    let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::new());
    app::build(
        &app::Settings::default(),
        store,
        Arc::new(Misdescribed(mistake)),
    )
}

#[tokio::test]
async fn an_api_route_must_name_a_registered_tool() {
    let refused = built(Mistake::RouteWithoutTool).map(|_| ());
    assert!(
        matches!(&refused, Err(mcp_pipeline::RegistryError::Product(m)) if m.contains("\"delete_note\"") && m.contains("/api/notes/{handle}")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn record_kinds_must_be_told_apart() {
    let refused = built(Mistake::PrefixTwice).map(|_| ());
    assert!(
        matches!(&refused, Err(mcp_pipeline::RegistryError::Product(m)) if m.contains("\"not\"")),
        "{refused:?}"
    );
}
