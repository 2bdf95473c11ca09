//! A tenant's records of one kind, read page by page: the one loop every listing and search
//! of the services goes through.

use store::{Item, Query, Store, TenantId};

use crate::BookingError;
use crate::ids::Kind;
use crate::keys;

/// The records of `kind` in `tenant`'s partition that `decode` reads and `keep` keeps, in key
/// order, at most `limit` (the reading stops there).
pub(crate) async fn scan<T>(
    store: &dyn Store,
    tenant: &TenantId,
    kind: Kind,
    decode: impl Fn(&str, &Item) -> Option<T>,
    keep: impl Fn(&T) -> bool,
    limit: usize,
) -> Result<Vec<T>, BookingError> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    let mut cursor = None;
    loop {
        let query = Query::partition(keys::partition(tenant, kind))
            .limit(100)
            .after(cursor);
        let page = store.query(query).await?;
        for (key, item) in &page.items {
            let Some(record) = decode(&key.sk, item).filter(|r| keep(r)) else {
                continue;
            };
            out.push(record);
            if out.len() == limit {
                return Ok(out);
            }
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}
