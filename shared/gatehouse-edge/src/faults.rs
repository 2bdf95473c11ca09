//! Faults a test asks the store objects for, in the test build only (feature `test-routes`,
//! `tests/edge.sh`): a request's headers name them and every message of the request to an
//! object carries them. A release build reads none of them and sends none.

use worker::Request;

/// The object holds its input this many milliseconds before it serves the message (nothing
/// else reaches it meanwhile), as a busy workspace's object would.
pub(crate) const HOLD_MS: &str = "x-gatehouse-test-hold-ms";
/// The bound of the object's copy of the global switch, instead of [`crate::mirror::BOUND_SECONDS`].
pub(crate) const BOUND_SECONDS: &str = "x-gatehouse-test-bound-seconds";
/// The workspace object cannot reach the global object (its asks fail).
pub(crate) const GLOBAL_UNREACHABLE: &str = "x-gatehouse-test-global-unreachable";
/// After this write, the object's alarm (the sweep of expired items) fires at once instead of
/// within the hour.
pub(crate) const SWEEP_NOW: &str = "x-gatehouse-test-sweep-now";

/// The faults of one request: header names and values.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults(Vec<(&'static str, String)>);

impl Faults {
    /// The faults `req` names (always none in a release build).
    pub(crate) fn of(req: &Request) -> Faults {
        #[cfg(feature = "test-routes")]
        {
            let named = [HOLD_MS, BOUND_SECONDS, GLOBAL_UNREACHABLE, SWEEP_NOW]
                .into_iter()
                .filter_map(|name| {
                    let value = req.headers().get(name).ok().flatten()?;
                    Some((name, value))
                });
            Faults(named.collect())
        }
        #[cfg(not(feature = "test-routes"))]
        {
            let _ = req;
            Faults::default()
        }
    }

    /// The headers that carry them.
    pub(crate) fn headers(&self) -> &[(&'static str, String)] {
        &self.0
    }
}

/// The number a fault header of `req` holds (always `None` in a release build).
pub(crate) fn number(req: &Request, name: &str) -> Option<i64> {
    #[cfg(feature = "test-routes")]
    {
        req.headers().get(name).ok().flatten()?.parse().ok()
    }
    #[cfg(not(feature = "test-routes"))]
    {
        let _ = (req, name);
        None
    }
}
