//! How a workspace writes prices (its currency and tax rate): the booking product's own
//! settings beside the platform's workspace (`accounts::workspaces`: id, name, zone, ADR 49).
//! They are written with the workspace, by the product's part of `tenant create`, and read by
//! quotes. A workspace made before they had an item of their own keeps them on the platform's
//! workspace item, where they are still read.

use std::sync::Arc;

use rust_decimal::Decimal;
use store::{Condition, Item, Put, Store, TenantId, TransactOp, Value};

use crate::{BookingError, keys};

/// A workspace's prices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prices {
    /// ISO 4217 currency.
    pub currency: String,
    /// Tax rate in percent.
    pub tax_rate: Decimal,
}

/// The prices of workspaces.
#[derive(Debug, Clone)]
pub struct Tenants {
    store: Arc<dyn Store>,
}

impl Prices {
    /// The write that stores `tenant`'s prices, once they are checked: a supported currency and
    /// a tax rate as quotes read it (0 to 100 percent, at most four decimals: a rate they
    /// could not read would be stored only to refuse every later quote). Commit it with the
    /// workspace's creation.
    pub fn plan(&self, tenant: &TenantId) -> Result<TransactOp, BookingError> {
        crate::money::Currency::parse(&self.currency).map_err(|e| BookingError::Money {
            field: "currency",
            error: e,
        })?;
        crate::money::TaxRate::parse(&self.tax_rate.to_string()).map_err(|e| {
            BookingError::Money {
                field: "tax_rate",
                error: e,
            }
        })?;
        let mut item = Item::new();
        item.insert("currency".into(), Value::s(&self.currency));
        item.insert("tax_rate".into(), Value::s(self.tax_rate.to_string()));
        Ok(Put::new(keys::prices(tenant), item)
            .when(Condition::item_not_exists())
            .into())
    }

    fn read(item: &Item) -> Option<Prices> {
        let s = |k: &str| item.get(k).and_then(Value::as_s);
        Some(Prices {
            currency: s("currency")?.to_owned(),
            tax_rate: s("tax_rate")?.parse().ok()?,
        })
    }
}

impl Tenants {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Tenants { store }
    }

    /// `tenant`'s prices: from their own item, else from the workspace item that held them
    /// before (workspaces made earlier).
    pub async fn prices(&self, tenant: &TenantId) -> Result<Prices, BookingError> {
        let own = keys::prices(tenant);
        let earlier = keys::workspace_of_earlier_stores(tenant);
        let found = self.store.batch_get(&[own, earlier]).await?;
        found
            .iter()
            .flatten()
            .find_map(Prices::read)
            .ok_or_else(|| BookingError::NotFound {
                kind: "workspace",
                id: tenant.as_str().to_owned(),
            })
    }
}
