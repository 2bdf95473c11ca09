//! Throttling of sign-in attempts, per account and per client address: after a few failures
//! each further attempt must wait, twice as long after each failure, up to a quarter of an
//! hour; the wait applies to the right password too (otherwise guessing goes on unhindered),
//! and a success clears the account's count. Counts are kept in the store, so every instance
//! sees them, and expire with their window.

use std::sync::Arc;

use store::{Key, Store, UpdateAction, Value};

use crate::{AccountsError, keys};

/// Failures of one account before attempts must wait.
pub const ACCOUNT_FREE_FAILURES: i64 = 5;
/// Failures from one address (over every account) before attempts must wait.
pub const ADDRESS_FREE_FAILURES: i64 = 20;
/// The longest wait, and how long failures are remembered after the last one.
pub const MAX_WAIT_SECONDS: i64 = 900;

/// The counts one sign-in attempt is held to: its account's and its client address's.
#[derive(Debug, Clone)]
pub struct Attempt {
    counts: Vec<(Key, i64)>,
}

impl Attempt {
    /// A member's sign-in from `address` (the client's address, when known).
    pub fn member(tenant: &str, member: &str, address: Option<&str>) -> Self {
        Self::of(keys::sign_in_member(tenant, member), address)
    }

    /// An operator's sign-in from `address`.
    pub fn operator(email: &str, address: Option<&str>) -> Self {
        Self::of(
            keys::sign_in_operator(&email.trim().to_lowercase()),
            address,
        )
    }

    fn of(account: Key, address: Option<&str>) -> Self {
        let mut counts = vec![(account, ACCOUNT_FREE_FAILURES)];
        if let Some(address) = address.filter(|a| !a.is_empty()) {
            counts.push((keys::sign_in_address(address), ADDRESS_FREE_FAILURES));
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

    /// Refuses the attempt while one of its counts says to wait.
    pub async fn check(&self, attempt: &Attempt) -> Result<(), AccountsError> {
        let keys: Vec<Key> = attempt.counts.iter().map(|(k, _)| k.clone()).collect();
        let got = self.store.batch_get(&keys).await?;
        let now = self.clock.now();
        let wait = got
            .iter()
            .zip(&attempt.counts)
            .filter_map(|(item, (_, free))| {
                let item = item.as_ref()?;
                let failures = crate::int(item, "failures")?;
                let last = crate::int(item, "last")?;
                Some(wait_seconds(failures, *free) - (now - last))
            })
            .max()
            .unwrap_or(0);
        if wait > 0 {
            return Err(AccountsError::Throttled {
                retry_after_seconds: wait.unsigned_abs(),
            });
        }
        Ok(())
    }

    /// Counts a failed attempt against its account and address.
    pub async fn failed(&self, attempt: &Attempt) -> Result<(), AccountsError> {
        let now = self.clock.now();
        for (key, _) in &attempt.counts {
            let count = store::Update::new(
                key.clone(),
                vec![
                    UpdateAction::Add("failures".into(), store::Number::from(1_i64)),
                    UpdateAction::Set("last".into(), Value::n(now)),
                    UpdateAction::Set(
                        store::TTL_ATTRIBUTE.into(),
                        Value::n(now + MAX_WAIT_SECONDS),
                    ),
                ],
            );
            self.store.update(count).await?;
        }
        Ok(())
    }

    /// A successful sign-in clears its account's count (not its address's).
    pub async fn succeeded(&self, attempt: &Attempt) -> Result<(), AccountsError> {
        if let Some((account, _)) = attempt.counts.first() {
            self.store
                .delete(store::Delete::new(account.clone()))
                .await?;
        }
        Ok(())
    }
}

/// How long after the last failure the next attempt must wait: nothing for the first `free`
/// failures, then 2 seconds, doubling with each failure, at most [`MAX_WAIT_SECONDS`].
fn wait_seconds(failures: i64, free: i64) -> i64 {
    if failures < free {
        return 0;
    }
    let doublings = u32::try_from(failures - free).unwrap_or(u32::MAX).min(10);
    (2_i64 << doublings).min(MAX_WAIT_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::wait_seconds;

    #[test]
    fn waits_double_up_to_a_quarter_hour() {
        assert_eq!(wait_seconds(4, 5), 0);
        assert_eq!(wait_seconds(5, 5), 2);
        assert_eq!(wait_seconds(6, 5), 4);
        assert_eq!(wait_seconds(30, 5), 900);
    }
}
