//! Who acts: passed to every service call. There is no ambient user.

use std::collections::BTreeSet;

use store::{MemberId, TenantId};

use crate::BookingError;

/// The member acting in a tenant, with the rights they hold right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The tenant.
    pub tenant: TenantId,
    /// The member (or connection creator).
    pub member: MemberId,
    /// Current rights.
    pub rights: BTreeSet<String>,
}

impl Actor {
    /// Fails unless the actor holds `right`.
    pub fn require(&self, right: &'static str) -> Result<(), BookingError> {
        if self.rights.contains(right) {
            Ok(())
        } else {
            Err(BookingError::Forbidden { right })
        }
    }
}
