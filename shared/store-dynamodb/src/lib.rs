//! The DynamoDB backend of [`store::Store`].
//!
//! This is the only crate of the workspace that depends on the AWS SDK. Keeping the SDK
//! behind the store trait means the rest of gatehouse compiles, tests and reasons against
//! `store` alone (memory and SQLite backends included), SDK types never leak into other
//! crates' APIs, and an SDK upgrade touches one crate.
//!
//! The backend holds DynamoDB to the semantics of [`store::MemoryStore`]:
//!
//! - requests are validated locally with `store::engine` first, so an invalid request fails
//!   with the same [`store::Invalid`] as on every backend, without a network call;
//! - DynamoDB deletes expired items lazily, so expiry is enforced here: reads drop expired
//!   items, every condition treats an expired item as absent, and an update of an expired item
//!   starts from an empty item (see [`DynamoStore`]);
//! - items come back without their key attributes, numbers in canonical text.

mod convert;
mod error;
mod expr;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    self as ddb, AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    KeysAndAttributes, ReturnValue, ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
    TableStatus, TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem,
};
use store::engine::{self, Failed};
use store::{
    CancelReason, Condition, Delete, Invalid, Item, Key, PK, Page, Put, Query, SK, SortCondition,
    Store, StoreError, TTL_ATTRIBUTE, TransactOp, Update, UpdateAction, Value,
};

use crate::convert::{Raw, item_from_raw, item_to_raw, key_from_raw, key_to_raw, opt_item};
use crate::error::{Failure, failure, invalid_from_message, unexpected};
use crate::expr::{Cond, Expr, expiry_is, update_expression};

/// The table's shape, for checking the infrastructure template against the code.
pub mod schema {
    /// The partition-key attribute (hash key).
    pub const PARTITION_KEY: &str = store::PK;
    /// The partition key's attribute type.
    pub const PARTITION_KEY_TYPE: &str = "S";
    /// The sort-key attribute (range key).
    pub const SORT_KEY: &str = store::SK;
    /// The sort key's attribute type.
    pub const SORT_KEY_TYPE: &str = "S";
    /// The attribute DynamoDB's time-to-live is enabled on.
    pub const TTL_ATTRIBUTE: &str = store::TTL_ATTRIBUTE;
    /// The billing mode the table is created with.
    pub const BILLING_MODE: &str = "PAY_PER_REQUEST";
}

/// Attempts of a write that may race with another writer of an expired item.
const MAX_WRITE_ATTEMPTS: usize = 4;
/// Attempts of a batch read whose keys DynamoDB leaves unprocessed.
const MAX_BATCH_ATTEMPTS: u32 = 8;
/// How long `create_table` waits for the table to become active.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether `name` follows DynamoDB's rule for table names: 3 to 255 of `A-Z a-z 0-9 _ . -`.
pub fn is_valid_table_name(name: &str) -> bool {
    (3..=255).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// Where the store's table is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamoConfig {
    /// The table name.
    pub table: String,
    /// An endpoint URL to use instead of AWS's (a local DynamoDB-compatible server).
    pub endpoint: Option<String>,
    /// A region to use instead of the environment's.
    pub region: Option<String>,
}

/// A [`Store`] on one DynamoDB table (`pk` string hash key, `sk` string range key, TTL on
/// `expires_at`).
///
/// Updates of expired items: DynamoDB may still hold an item whose expiry has passed, and an
/// update there must start from an empty item. Each update therefore requires the item to be
/// live; when that check fails on an expired item (and the caller's condition holds for an
/// absent item), the new item is computed locally from nothing and put in place of the expired
/// one, on condition that it is still the same expired item. Races retry a few times.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Decides which items have expired (DynamoDB deletes them only eventually).
    clock: Arc<dyn outside::Clock>,
}

fn build_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("could not build a DynamoDB request: {e}"))
}

fn request_token() -> String {
    outside::random_text(&outside::SystemRandomness, 32)
}

fn holds_absent(condition: Option<&Condition>) -> bool {
    condition.is_none_or(|c| c.holds(None))
}

fn live(item: Option<Item>, now: i64) -> Option<Item> {
    item.filter(|i| engine::is_live(i, now))
}

/// The sort keys a query may return, after folding the cases DynamoDB refuses (empty bounds,
/// inverted ranges).
enum Range {
    Nothing,
    All,
    Where(SortCondition),
}

fn sort_range(condition: Option<&SortCondition>) -> Range {
    use SortCondition as S;
    let Some(condition) = condition else {
        return Range::All;
    };
    match condition {
        // Sort keys are never empty.
        S::Eq(v) | S::Lt(v) | S::Le(v) if v.is_empty() => Range::Nothing,
        S::BeginsWith(v) | S::Gt(v) | S::Ge(v) if v.is_empty() => Range::All,
        S::Between(lo, hi) if lo > hi || hi.is_empty() => Range::Nothing,
        S::Between(lo, hi) if lo.is_empty() => Range::Where(S::Le(hi.clone())),
        other => Range::Where(other.clone()),
    }
}

/// Whether a sort key that does not match `condition` lies before every key that does.
fn below(condition: &SortCondition, sk: &str) -> bool {
    use SortCondition as S;
    match condition {
        S::Eq(v) | S::BeginsWith(v) | S::Between(v, _) => sk < v.as_str(),
        S::Lt(_) | S::Le(_) => false,
        S::Gt(_) | S::Ge(_) => true,
    }
}

impl DynamoStore {
    /// A store on `config.table`, with credentials and region from the environment (the
    /// standard AWS chain), overridden by the config's endpoint and region when given.
    pub async fn from_env(config: DynamoConfig) -> DynamoStore {
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(region) = config.region {
            loader = loader.region(Region::new(region));
        }
        if let Some(endpoint) = config.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let shared = loader.load().await;
        DynamoStore {
            client: Client::new(&shared),
            table: config.table,
            clock: Arc::new(outside::SystemClock),
        }
    }

    /// A store on a local DynamoDB-compatible server (static test credentials, `us-east-1`).
    pub fn local(endpoint: &str, table: &str) -> DynamoStore {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(Credentials::new(
                "test",
                "test",
                None,
                None,
                "gatehouse-local",
            ))
            .build();
        DynamoStore {
            client: Client::from_conf(config),
            table: table.to_owned(),
            clock: Arc::new(outside::SystemClock),
        }
    }

    /// Decides expiry by `clock` instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn outside::Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Proves that the table exists and can be reached before anything is served (the CLI
    /// calls it; the Lambda functions do not, their role grants no `DescribeTable`). The error
    /// names the table and what to do, instead of the SDK's chain of causes.
    pub async fn prove_table(&self) -> Result<(), String> {
        let described = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
        let Err(err) = described else {
            return Ok(());
        };
        let table = &self.table;
        let not_found = err
            .as_service_error()
            .is_some_and(|e| e.is_resource_not_found_exception());
        let text = aws_sdk_dynamodb::error::DisplayErrorContext(&err).to_string();
        let lower = text.to_lowercase();
        Err(if not_found {
            format!(
                "DynamoDB table {table} does not exist here. On a local DynamoDB-compatible server, \
                 create it with `gatehouse dynamodb create-table --dynamodb-table {table} \
                 --dynamodb-endpoint <url>`; on AWS, deploy infra/template.json and use its \
                 TableName output"
            )
        } else if lower.contains("credential") {
            format!(
                "no AWS credentials to reach DynamoDB table {table}: set AWS_PROFILE, or \
                 AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values for a local server)"
            )
        } else if lower.contains("region") && !lower.contains("not authorized") {
            format!("no AWS region for DynamoDB table {table}: set AWS_REGION")
        } else if lower.contains("accessdenied") || lower.contains("not authorized") {
            format!(
                "these AWS credentials may not read DynamoDB table {table} (dynamodb:DescribeTable \
                 is needed by the CLI): {}",
                first_line(&text)
            )
        } else if lower.contains("connect") || lower.contains("dns") {
            format!(
                "cannot connect to DynamoDB for table {table}: is the endpoint right and its \
                 server running? ({})",
                first_line(&text).chars().take(120).collect::<String>()
            )
        } else {
            format!("cannot reach DynamoDB table {table}: {}", first_line(&text))
        })
    }

    /// Creates the table when absent, waits until it is active and enables time-to-live on
    /// `expires_at` where the server supports it. An existing table is fine.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
        };
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
        };
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key(schema::PARTITION_KEY, KeyType::Hash).map_err(build_error)?)
            .key_schema(key(schema::SORT_KEY, KeyType::Range).map_err(build_error)?)
            .attribute_definitions(attribute(schema::PARTITION_KEY).map_err(build_error)?)
            .attribute_definitions(attribute(schema::SORT_KEY).map_err(build_error)?)
            .send()
            .await;
        match created {
            Ok(_) => tracing::debug!(table = %self.table, "created table"),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_in_use_exception()) =>
            {
                tracing::debug!(table = %self.table, "table exists");
            }
            Err(e) => return Err(unexpected(failure(e), "", None)),
        }
        self.wait_active().await?;
        self.enable_ttl().await
    }

    async fn wait_active(&self) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        loop {
            let described = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| unexpected(failure(e), "", None))?;
            let status = described.table().and_then(|t| t.table_status());
            if status == Some(&TableStatus::Active) {
                return Ok(());
            }
            if started.elapsed() > TABLE_ACTIVE_TIMEOUT {
                return Err(StoreError::Unavailable(format!(
                    "table {} is not active after {TABLE_ACTIVE_TIMEOUT:?}",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn enable_ttl(&self) -> Result<(), StoreError> {
        if let Ok(described) = self
            .client
            .describe_time_to_live()
            .table_name(&self.table)
            .send()
            .await
        {
            let ttl = described.time_to_live_description();
            let status = ttl.and_then(|d| d.time_to_live_status());
            let on = matches!(
                status,
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            );
            if on && ttl.and_then(|d| d.attribute_name()) == Some(schema::TTL_ATTRIBUTE) {
                return Ok(());
            }
        }
        let spec = TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(schema::TTL_ATTRIBUTE)
            .build()
            .map_err(build_error)?;
        let updated = self
            .client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(spec)
            .send()
            .await;
        let Err(e) = updated else {
            return Ok(());
        };
        let code = e
            .as_service_error()
            .and_then(|s| aws_sdk_dynamodb::error::ProvideErrorMetadata::code(s));
        let message = e
            .as_service_error()
            .and_then(|s| aws_sdk_dynamodb::error::ProvideErrorMetadata::message(s))
            .unwrap_or_default()
            .to_ascii_lowercase();
        match code {
            // A server without TTL support: reads and conditions enforce expiry anyway.
            Some(
                "UnknownOperationException"
                | "UnsupportedOperationException"
                | "NotImplemented"
                | "NotImplementedException",
            ) => {
                tracing::debug!(table = %self.table, "server does not support time-to-live");
                Ok(())
            }
            Some("ValidationException") if message.contains("already enabled") => Ok(()),
            _ => Err(unexpected(failure(e), "", None)),
        }
    }

    /// The item at `key` as stored, expired or not.
    async fn get_raw(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_to_raw(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unexpected(failure(e), "", None))?;
        opt_item(out.item.as_ref())
    }

    /// The items at `keys` (at most 100, distinct) as stored, expired or not.
    async fn batch_get_raw(&self, keys: &[Key]) -> Result<HashMap<Key, Item>, StoreError> {
        let mut found = HashMap::with_capacity(keys.len());
        let mut pending: Vec<Raw> = keys.iter().map(key_to_raw).collect();
        for attempt in 0..MAX_BATCH_ATTEMPTS {
            if pending.is_empty() {
                break;
            }
            if attempt > 0 {
                tracing::debug!(
                    attempt,
                    unprocessed = pending.len(),
                    "retrying unprocessed keys"
                );
                tokio::time::sleep(Duration::from_millis((20u64 << attempt).min(500))).await;
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .consistent_read(true)
                .build()
                .map_err(build_error)?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| unexpected(failure(e), "", None))?;
            for raw in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                found.insert(key_from_raw(&raw)?, item_from_raw(&raw)?);
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        if pending.is_empty() {
            Ok(found)
        } else {
            Err(StoreError::Throttled)
        }
    }

    /// The error of a single-item write that failed: the condition failure with the live old
    /// item when asked for, or the mapped error.
    fn write_failure(
        failure: Failure,
        now: i64,
        return_old: bool,
        size: Option<usize>,
    ) -> StoreError {
        match failure {
            Failure::ConditionFailed(raw) => match opt_item(raw.as_ref()) {
                Ok(old) => StoreError::ConditionFailed {
                    old: live(old, now).filter(|_| return_old),
                },
                Err(e) => e,
            },
            other => unexpected(other, "", size),
        }
    }

    /// Puts the update's result, computed from an empty item, in place of the expired item
    /// `old`, provided it is still that item. `None` when it changed meanwhile.
    async fn replace_expired(
        &self,
        update: &Update,
        old: &Item,
    ) -> Result<Option<Item>, StoreError> {
        let new = engine::apply_actions(None, &update.actions)?;
        engine::validate_item(&update.key, &new)?;
        let Some(expiry) = old.get(TTL_ATTRIBUTE) else {
            return Ok(None);
        };
        let mut expr = Expr::new();
        let condition = expiry_is(expiry).render_always(&mut expr);
        let (names, values) = expr.into_maps();
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item_to_raw(&update.key, &new)))
            .condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .send()
            .await;
        match put {
            Ok(_) => Ok(Some(new)),
            Err(e) => match failure(e) {
                Failure::ConditionFailed(_) => Ok(None),
                other => Err(unexpected(
                    other,
                    "",
                    Some(store::item_size(&update.key, &new)),
                )),
            },
        }
    }

    /// After DynamoDB refused a transaction as invalid: plans it with the memory backend's
    /// rules on the stored items to find the same `Invalid` the memory backend gives.
    async fn diagnose(&self, ops: &[TransactOp], now: i64) -> Result<Option<Invalid>, StoreError> {
        let keys: Vec<Key> = ops.iter().map(|op| op.key().clone()).collect();
        let stored = self.batch_get_raw(&keys).await?;
        for op in ops {
            if let Err(invalid) = engine::plan(op, stored.get(op.key()), now) {
                return Ok(Some(invalid));
            }
        }
        Ok(None)
    }

    /// After DynamoDB refused an update as invalid: decides with the memory backend's rules on
    /// the stored item. Returns the stored item when it is expired (the update then starts from
    /// an empty item), else the error the memory backend gives.
    async fn diagnose_update(
        &self,
        update: &Update,
        message: &str,
        now: i64,
    ) -> Result<Item, StoreError> {
        let stored = self.get_raw(&update.key).await?;
        let op = TransactOp::Update(update.clone());
        let effect = match engine::plan(&op, stored.as_ref(), now)? {
            Err(Failed { old }) => return Err(StoreError::ConditionFailed { old }),
            Ok(effect) => effect,
        };
        if let Some(stored) = stored.filter(|s| !engine::is_live(s, now)) {
            return Ok(stored);
        }
        let size = match effect {
            engine::Effect::Store(item) => Some(store::item_size(&update.key, &item)),
            engine::Effect::Remove | engine::Effect::Keep => None,
        };
        let attribute = update
            .actions
            .iter()
            .find(|a| matches!(a, UpdateAction::Add(..) | UpdateAction::Append(..)))
            .map_or("", UpdateAction::attribute);
        Err(invalid_from_message(message, attribute, size).into())
    }

    /// One operation of a transaction; `replacement` is the (expiry, item) of an update that
    /// replaces an expired item.
    fn transact_item(
        &self,
        op: &TransactOp,
        replacement: Option<&(Value, Item)>,
        now: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        match (op, replacement) {
            (TransactOp::Update(update), Some((expiry, new))) => {
                self.transact_replace(&update.key, expiry, new)
            }
            (TransactOp::Update(update), None) => self.transact_update(update, now),
            (TransactOp::Put(put), _) => self.transact_put(put, now),
            (TransactOp::Delete(delete), _) => self.transact_delete(delete, now),
            (TransactOp::Check(check), _) => self.transact_check(check, now),
        }
    }

    /// An update of an expired item, as a put of its replacement while the expiry is unchanged.
    fn transact_replace(
        &self,
        key: &Key,
        expiry: &Value,
        new: &Item,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::new();
        let condition = expiry_is(expiry).render_always(&mut expr);
        let (names, values) = expr.into_maps();
        let put = ddb::Put::builder()
            .table_name(&self.table)
            .set_item(Some(item_to_raw(key, new)))
            .condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn transact_update(&self, update: &Update, now: i64) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::new();
        let update_text = update_expression(&update.actions, &mut expr);
        let condition = Cond::live_and(update.condition.as_ref(), now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let update = ddb::Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_to_raw(&update.key)))
            .update_expression(update_text)
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    fn transact_put(&self, put: &Put, now: i64) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::new();
        let condition = Cond::of_write(put.condition.as_ref(), now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let put = ddb::Put::builder()
            .table_name(&self.table)
            .set_item(Some(item_to_raw(&put.key, &put.item)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_return_values_on_condition_check_failure(old_on_failure(put.return_old_on_failure))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn transact_delete(&self, delete: &Delete, now: i64) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::new();
        let condition = Cond::of_write(delete.condition.as_ref(), now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let delete = ddb::Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_to_raw(&delete.key)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_return_values_on_condition_check_failure(old_on_failure(
                delete.return_old_on_failure,
            ))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    fn transact_check(
        &self,
        check: &store::ConditionCheck,
        now: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expr = Expr::new();
        let condition = Cond::absent_if_expired(&check.condition, now).render_always(&mut expr);
        let (names, values) = expr.into_maps();
        let check = ddb::ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_to_raw(&check.key)))
            .condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_return_values_on_condition_check_failure(old_on_failure(
                check.return_old_on_failure,
            ))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }
}

/// Asks for the current item on a failed condition when the caller asked for it.
fn old_on_failure(asked: bool) -> Option<ReturnValuesOnConditionCheckFailure> {
    asked.then_some(ReturnValuesOnConditionCheckFailure::AllOld)
}

#[async_trait::async_trait]
impl Store for DynamoStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        engine::validate_key(key)?;
        let now = self.clock.now();
        Ok(live(self.get_raw(key).await?, now))
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        engine::validate_batch(keys)?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let mut found = self.batch_get_raw(keys).await?;
        Ok(keys.iter().map(|k| live(found.remove(k), now)).collect())
    }

    async fn put(&self, put: Put) -> Result<(), StoreError> {
        engine::validate_item(&put.key, &put.item)?;
        let now = self.clock.now();
        let mut expr = Expr::new();
        let condition = Cond::of_write(put.condition.as_ref(), now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item_to_raw(&put.key, &put.item)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_return_values_on_condition_check_failure(
                put.return_old_on_failure
                    .then_some(ReturnValuesOnConditionCheckFailure::AllOld),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => Err(Self::write_failure(
                failure(e),
                now,
                put.return_old_on_failure,
                Some(store::item_size(&put.key, &put.item)),
            )),
        }
    }

    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        engine::validate_key(&update.key)?;
        engine::validate_actions(&update.actions)?;
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            let now = self.clock.now();
            let mut expr = Expr::new();
            let update_text = update_expression(&update.actions, &mut expr);
            let condition = Cond::live_and(update.condition.as_ref(), now).render(&mut expr);
            let (names, values) = expr.into_maps();
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_to_raw(&update.key)))
                .update_expression(update_text)
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            // The item as it was when DynamoDB refused the update.
            let stored = match result {
                Ok(out) => return Ok(opt_item(out.attributes.as_ref())?.unwrap_or_default()),
                Err(e) => match failure(e) {
                    Failure::ConditionFailed(raw) => opt_item(raw.as_ref())?,
                    Failure::Validation(message) => {
                        Some(self.diagnose_update(&update, &message, now).await?)
                    }
                    other => return Err(unexpected(other, "", None)),
                },
            };
            match stored {
                Some(old)
                    if !engine::is_live(&old, now) && holds_absent(update.condition.as_ref()) =>
                {
                    if let Some(new) = self.replace_expired(&update, &old).await? {
                        return Ok(new);
                    }
                    tracing::debug!(attempt, "expired item changed while being replaced");
                }
                old => {
                    return Err(StoreError::ConditionFailed {
                        old: live(old, now).filter(|_| update.return_old_on_failure),
                    });
                }
            }
        }
        Err(StoreError::Unavailable(
            "update kept racing with other writes of an expired item".to_owned(),
        ))
    }

    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        engine::validate_key(&delete.key)?;
        let now = self.clock.now();
        let mut expr = Expr::new();
        let condition = Cond::of_write(delete.condition.as_ref(), now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_to_raw(&delete.key)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values(ReturnValue::AllOld)
            .set_return_values_on_condition_check_failure(
                delete
                    .return_old_on_failure
                    .then_some(ReturnValuesOnConditionCheckFailure::AllOld),
            )
            .send()
            .await;
        match result {
            Ok(out) => Ok(live(opt_item(out.attributes.as_ref())?, now)),
            Err(e) => Err(Self::write_failure(
                failure(e),
                now,
                delete.return_old_on_failure,
                None,
            )),
        }
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let after = engine::validate_query(&query)?;
        let range = sort_range(query.sort.as_ref());
        let Some(start) = start_of(&range, after, query.descending) else {
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        };
        let now = self.clock.now();
        let mut expr = Expr::new();
        let key_condition = key_condition(&mut expr, &query.pk, &range);
        let filter = Cond::live(now).render(&mut expr);
        let (names, values) = expr.into_maps();
        let start_key = start.map(|sk| key_to_raw(&Key::new(query.pk.clone(), sk)));
        // One item more than the limit tells whether another live item follows the page.
        let limit = query
            .limit
            .map(|l| i32::try_from(u64::from(l) + 1).unwrap_or(i32::MAX));
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(key_condition)
            .set_filter_expression(filter)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .scan_index_forward(!query.descending)
            .set_limit(limit)
            .set_exclusive_start_key(start_key)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unexpected(failure(e), "", None))?;
        page_of(out, query.limit, now)
    }

    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        engine::validate_transaction(&ops)?;
        // Updates of expired items, rewritten as puts: op index → (old expiry, new item).
        let mut replacements: HashMap<usize, (Value, Item)> = HashMap::new();
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            let now = self.clock.now();
            let items = ops
                .iter()
                .enumerate()
                .map(|(i, op)| self.transact_item(op, replacements.get(&i), now))
                .collect::<Result<Vec<_>, _>>()?;
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items))
                .client_request_token(request_token())
                .send()
                .await;
            let reasons = match result {
                Ok(_) => return Ok(()),
                Err(e) => match failure(e) {
                    Failure::Cancelled(reasons) => reasons,
                    Failure::Validation(message) => {
                        let invalid = self.diagnose(&ops, now).await?;
                        return Err(invalid
                            .unwrap_or_else(|| invalid_from_message(&message, "", None))
                            .into());
                    }
                    other => return Err(unexpected(other, "", None)),
                },
            };
            let mut verdict = Verdict::default();
            let mut out = Vec::with_capacity(ops.len());
            for (i, op) in ops.iter().enumerate() {
                let reason = reasons.get(i);
                out.push(cancel_reason(
                    i,
                    op,
                    reason,
                    &mut replacements,
                    now,
                    &mut verdict,
                )?);
            }
            let Verdict {
                stands,
                retry,
                validation,
            } = verdict;
            if validation && let Some(invalid) = self.diagnose(&ops, now).await? {
                return Err(invalid.into());
            }
            if stands || !retry {
                return Err(StoreError::TransactionCancelled { reasons: out });
            }
            tracing::debug!(attempt, "retrying a transaction that updates expired items");
        }
        Err(StoreError::Unavailable(
            "transaction kept racing with other writes of expired items".to_owned(),
        ))
    }
}

/// What a cancelled transaction's reasons add up to.
#[derive(Debug, Default)]
struct Verdict {
    /// A reason that stands: the transaction failed for the caller.
    stands: bool,
    /// An update of an expired item to plan again (a put of its replacement).
    retry: bool,
    /// DynamoDB found the request invalid.
    validation: bool,
}

/// The store's reason for operation `i` from DynamoDB's, noting in `verdict` what it means
/// for the transaction. A condition that failed only because an update's item had expired
/// becomes a replacement to retry with.
fn cancel_reason(
    i: usize,
    op: &TransactOp,
    reason: Option<&aws_sdk_dynamodb::types::CancellationReason>,
    replacements: &mut HashMap<usize, (Value, Item)>,
    now: i64,
    verdict: &mut Verdict,
) -> Result<CancelReason, StoreError> {
    let code = reason.and_then(|r| r.code()).unwrap_or("None");
    let message = reason.and_then(|r| r.message()).unwrap_or_default();
    Ok(match code {
        "None" => CancelReason::None,
        "ConditionalCheckFailed" if replacements.remove(&i).is_some() => {
            // The expired item changed since it was read: plan the update again.
            verdict.retry = true;
            CancelReason::None
        }
        "ConditionalCheckFailed" => {
            let old = opt_item(reason.and_then(|r| r.item.as_ref()))?;
            match (op, old) {
                (TransactOp::Update(update), Some(old))
                    if !engine::is_live(&old, now) && holds_absent(update.condition.as_ref()) =>
                {
                    let new = engine::apply_actions(None, &update.actions)?;
                    engine::validate_item(&update.key, &new)?;
                    if let Some(expiry) = old.get(TTL_ATTRIBUTE) {
                        replacements.insert(i, (expiry.clone(), new));
                    }
                    verdict.retry = true;
                    CancelReason::None
                }
                (op, old) => {
                    verdict.stands = true;
                    CancelReason::ConditionFailed {
                        old: live(old, now).filter(|_| op.wants_old_on_failure()),
                    }
                }
            }
        }
        "TransactionConflict" => {
            verdict.stands = true;
            CancelReason::Conflict
        }
        other => {
            verdict.validation |= other == "ValidationError";
            verdict.stands = true;
            CancelReason::Other(format!("{other}: {message}"))
        }
    })
}

/// The first line of an error's text, at most 300 characters.
fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}

/// Where a query starts: `None` when nothing can match, else the sort key to start after (if
/// any). DynamoDB refuses a start key outside the key condition, so a cursor outside the range
/// is placed here: before it the query starts at the range, past it nothing is left.
fn start_of(range: &Range, after: Option<String>, descending: bool) -> Option<Option<String>> {
    match (range, after) {
        (Range::Nothing, _) => None,
        (_, None) => Some(None),
        (Range::All, Some(sk)) => Some(Some(sk)),
        (Range::Where(c), Some(sk)) if c.matches(&sk) => Some(Some(sk)),
        (Range::Where(c), Some(sk)) => (below(c, &sk) != descending).then_some(None),
    }
}

/// The key condition: the partition, and the sort-key range when there is one.
fn key_condition(expr: &mut Expr, pk: &str, range: &Range) -> String {
    let pk_name = expr.name(PK);
    let pk_value = expr.value(AttributeValue::S(pk.to_owned()));
    let partition = format!("{pk_name} = {pk_value}");
    let Range::Where(c) = range else {
        return partition;
    };
    let sk = expr.name(SK);
    let mut v = |s: &String| expr.value(AttributeValue::S(s.clone()));
    let part = match c {
        SortCondition::Eq(x) => format!("{sk} = {}", v(x)),
        SortCondition::BeginsWith(x) => format!("begins_with({sk}, {})", v(x)),
        SortCondition::Between(lo, hi) => {
            let (lo, hi) = (v(lo), v(hi));
            format!("{sk} BETWEEN {lo} AND {hi}")
        }
        SortCondition::Lt(x) => format!("{sk} < {}", v(x)),
        SortCondition::Le(x) => format!("{sk} <= {}", v(x)),
        SortCondition::Gt(x) => format!("{sk} > {}", v(x)),
        SortCondition::Ge(x) => format!("{sk} >= {}", v(x)),
    };
    format!("{partition} AND {part}")
}

/// The page a query's answer makes: its live items, at most `limit`, and the cursor of the
/// next page when more may follow.
fn page_of(
    out: aws_sdk_dynamodb::operation::query::QueryOutput,
    limit: Option<u32>,
    now: i64,
) -> Result<Page, StoreError> {
    let mut items = Vec::new();
    for raw in out.items.unwrap_or_default() {
        let key = key_from_raw(&raw)?;
        let item = item_from_raw(&raw)?;
        if engine::is_live(&item, now) {
            items.push((key, item));
        }
    }
    let next = match limit.map(|l| l as usize) {
        Some(limit) if items.len() > limit => {
            items.truncate(limit);
            items.last().map(|(k, _)| engine::encode_cursor(k))
        }
        _ => match out.last_evaluated_key {
            Some(last) if !last.is_empty() => Some(engine::encode_cursor(&key_from_raw(&last)?)),
            _ => None,
        },
    };
    Ok(Page { items, next })
}
