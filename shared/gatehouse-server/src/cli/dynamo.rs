//! DynamoDB for the CLI, behind the `dynamodb` feature (on by default): a quick local build can
//! leave the AWS SDK out (`--no-default-features`), and then says so when a table is named.

use std::sync::Arc;

#[cfg(feature = "dynamodb")]
fn store(
    table: &str,
    endpoint: Option<String>,
) -> impl Future<Output = store_dynamodb::DynamoStore> {
    store_dynamodb::DynamoStore::from_env(store_dynamodb::DynamoConfig {
        table: table.to_owned(),
        endpoint,
        region: None,
    })
}

/// The table as the store, proven there and reachable before anything is served or changed.
#[cfg(feature = "dynamodb")]
pub(crate) async fn open(
    table: &str,
    endpoint: Option<String>,
) -> anyhow::Result<Arc<dyn store::Store>> {
    let store = store(table, endpoint).await;
    store.prove_table().await.map_err(anyhow::Error::msg)?;
    Ok(Arc::new(store))
}

/// Creates the table (with time-to-live) unless it exists, then proves it.
#[cfg(feature = "dynamodb")]
pub(crate) async fn create_table(table: &str, endpoint: Option<String>) -> anyhow::Result<()> {
    let store = store(table, endpoint).await;
    store
        .create_table()
        .await
        .map_err(|e| anyhow::anyhow!("creating DynamoDB table {table}: {e}"))?;
    store.prove_table().await.map_err(anyhow::Error::msg)
}

#[cfg(not(feature = "dynamodb"))]
const WITHOUT: &str = "this program was built without DynamoDB support (for gatehouse: \
    build or install it without --no-default-features; for a product's own binary: enable \
    gatehouse-server's `dynamodb` feature)";

#[cfg(not(feature = "dynamodb"))]
pub(crate) async fn open(
    _table: &str,
    _endpoint: Option<String>,
) -> anyhow::Result<Arc<dyn store::Store>> {
    anyhow::bail!(WITHOUT)
}

#[cfg(not(feature = "dynamodb"))]
pub(crate) async fn create_table(_table: &str, _endpoint: Option<String>) -> anyhow::Result<()> {
    anyhow::bail!(WITHOUT)
}
