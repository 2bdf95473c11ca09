//! Throttling of sign-in attempts (ADR 48). An attempt is counted *before* its password is
//! checked, by conditional adds in one transaction: one count per account and client address
//! (5 within a quarter hour), one per account (50) and one per address over every account
//! (100). An attempt that would pass a limit is refused unchecked, the right password too, so
//! that concurrent guesses cannot outrun the count. A success takes its own attempt back and
//! clears its account and address's count; failures are forgotten a quarter hour after the
//! last one (the counts' time to live). `member unlock` and a password change clear an
//! account's counts. Counts are kept in the store, so every instance sees them.

use std::sync::Arc;

use store::{Condition, Key, Store, StoreError, TransactOp, Update, UpdateAction, Value};

use crate::{AccountsError, keys};

/// Attempts of one account from one address within [`WINDOW_SECONDS`].
pub const PAIR_ATTEMPTS: i64 = 5;
/// Failed attempts of one account, from every address, within [`WINDOW_SECONDS`].
pub const ACCOUNT_ATTEMPTS: i64 = 50;
/// Failed attempts from one address, over every account, within [`WINDOW_SECONDS`].
pub const ADDRESS_ATTEMPTS: i64 = 100;
/// How long failures are remembered after the last one, and so the longest wait.
pub const WINDOW_SECONDS: i64 = 900;

/// Which count a limit keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// One account from one address: cleared by that account's success.
    Pair,
    /// One account from everywhere.
    Account,
    /// One address over every account.
    Address,
}

/// The counts one sign-in attempt is held to.
#[derive(Debug, Clone)]
pub struct Attempt {
    counts: Vec<(Scope, Key, i64)>,
}

impl Attempt {
    /// A member's sign-in from `address` (the client's address, when known).
    pub fn member(
        tenant: &store::TenantId,
        member: &store::MemberId,
        address: Option<&str>,
    ) -> Self {
        let (account, pair) = keys::sign_in_member(tenant, member, address.unwrap_or_default());
        Self::of(account, pair, address)
    }

    /// An operator's sign-in from `address`.
    pub fn operator(email: &str, address: Option<&str>) -> Self {
        let email = email.trim().to_lowercase();
        let (account, pair) = keys::sign_in_operator(&email, address.unwrap_or_default());
        Self::of(account, pair, address)
    }

    fn of(account: Key, pair: Key, address: Option<&str>) -> Self {
        let mut counts = vec![
            (Scope::Pair, pair, PAIR_ATTEMPTS),
            (Scope::Account, account, ACCOUNT_ATTEMPTS),
        ];
        if let Some(address) = address.filter(|a| !a.is_empty()) {
            counts.push((
                Scope::Address,
                keys::sign_in_address(address),
                ADDRESS_ATTEMPTS,
            ));
        }
        Attempt { counts }
    }
}

/// The sign-in throttle.
#[derive(Debug, Clone)]
pub struct Throttle {
    store: Arc<dyn Store>,
    clock: Arc<dyn outside::Clock>,
}

impl Throttle {
    /// The throttle over `store`, telling time by `clock`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn outside::Clock>) -> Self {
        Throttle { store, clock }
    }

    /// Counts the attempt before its password is checked: every count grows by one in one
    /// transaction, on the condition that each is under its limit; when one is not, nothing
    /// is counted and the attempt is refused with how long to wait.
    pub async fn begin(&self, attempt: &Attempt) -> Result<(), AccountsError> {
        let now = self.clock.now();
        let ops: Vec<TransactOp> = attempt
            .counts
            .iter()
            .map(|(_, key, limit)| {
                let under = Condition::NotExists("failures".into()).or(Condition::Cmp(
                    "failures".into(),
                    store::CmpOp::Lt,
                    Value::n(*limit),
                ));
                Update::new(key.clone(), count_actions(now))
                    .when(under)
                    .return_old_on_failure()
                    .into()
            })
            .collect();
        match self.store.transact_write(ops).await {
            Ok(()) => Ok(()),
            Err(StoreError::TransactionCancelled { reasons }) => {
                let wait = reasons
                    .iter()
                    .filter_map(|r| match r {
                        store::CancelReason::ConditionFailed { old: Some(old) } => {
                            crate::int(old, "last")
                        }
                        _ => None,
                    })
                    .map(|last| last + WINDOW_SECONDS - now)
                    .max();
                match wait {
                    Some(wait) => Err(AccountsError::Throttled {
                        retry_after_seconds: wait.max(1).unsigned_abs(),
                    }),
                    // Another sign-in counted at the same moment: a wait of a second.
                    None => Err(AccountsError::Throttled {
                        retry_after_seconds: 1,
                    }),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A successful sign-in: its account and address start afresh, and its own attempt is
    /// taken back from the wider counts (which count failures).
    pub async fn succeeded(&self, attempt: &Attempt) -> Result<(), AccountsError> {
        // The window is the failures': a success does not lengthen it.
        let take_back = vec![UpdateAction::Add(
            "failures".into(),
            store::Number::from(-1_i64),
        )];
        let ops: Vec<TransactOp> = attempt
            .counts
            .iter()
            .map(|(scope, key, _)| match scope {
                Scope::Pair => store::Delete::new(key.clone()).into(),
                Scope::Account | Scope::Address => Update::new(key.clone(), take_back.clone())
                    .when(Condition::Cmp(
                        "failures".into(),
                        store::CmpOp::Gt,
                        Value::n(0),
                    ))
                    .into(),
            })
            .collect();
        // A wider count gone meanwhile (expired) leaves nothing to take back: write the rest.
        match self.store.transact_write(ops).await {
            Err(StoreError::TransactionCancelled { .. }) => {
                let pair = attempt.counts.iter().find(|(s, _, _)| *s == Scope::Pair);
                if let Some((_, key, _)) = pair {
                    self.store.delete(store::Delete::new(key.clone())).await?;
                }
                Ok(())
            }
            other => Ok(other?),
        }
    }
}

/// Clears every count of a member's account (`member unlock`, a password change): the account's
/// own and those of each address it was tried from.
pub async fn clear_member(
    store: &dyn Store,
    tenant: &store::TenantId,
    member: &store::MemberId,
) -> Result<(), AccountsError> {
    let (account, _) = keys::sign_in_member(tenant, member, "");
    clear_account(store, &account).await
}

/// Clears every count of an operator's account.
pub async fn clear_operator(store: &dyn Store, email: &str) -> Result<(), AccountsError> {
    let (account, _) = keys::sign_in_operator(&email.trim().to_lowercase(), "");
    clear_account(store, &account).await
}

/// Deletes the account's count and its pairs, which share its partition and extend its sort
/// key with `#` and the address.
async fn clear_account(store: &dyn Store, account: &Key) -> Result<(), AccountsError> {
    store.delete(store::Delete::new(account.clone())).await?;
    let mut cursor = None;
    loop {
        let query = store::Query::partition(account.pk.clone())
            .sort(store::SortCondition::BeginsWith(format!("{}#", account.sk)))
            .limit(100)
            .after(cursor);
        let page = store.query(query).await?;
        for (key, _) in &page.items {
            store.delete(store::Delete::new(key.clone())).await?;
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}

/// Adds one to a count, stamped `now`, remembered for the window after.
fn count_actions(now: i64) -> Vec<UpdateAction> {
    vec![
        UpdateAction::Add("failures".into(), store::Number::from(1_i64)),
        UpdateAction::Set("last".into(), Value::n(now)),
        UpdateAction::Set(store::TTL_ATTRIBUTE.into(), Value::n(now + WINDOW_SECONDS)),
    ]
}
