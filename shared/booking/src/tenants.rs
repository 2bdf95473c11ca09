//! Tenants: a field-service company's settings (time zone, currency, tax rate).

use std::sync::Arc;

use rust_decimal::Decimal;
use store::{Condition, Item, Put, Store, Value};

use crate::{Actor, BookingError, Change, keys, rights};

/// A tenant's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The tenant id.
    pub id: String,
    /// Company name.
    pub name: String,
    /// IANA time zone (the default for times given without a zone of their own).
    pub zone: String,
    /// ISO 4217 currency.
    pub currency: String,
    /// Tax rate in percent.
    pub tax_rate: Decimal,
}

/// The tenant service.
#[derive(Debug, Clone)]
pub struct Tenants {
    store: Arc<dyn Store>,
}

impl Tenants {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Tenants { store }
    }

    /// The actor's tenant.
    pub async fn get(&self, actor: &Actor) -> Result<Tenant, BookingError> {
        let item = self
            .store
            .get(&keys::tenant(&actor.tenant))
            .await?
            .ok_or_else(|| BookingError::NotFound {
                kind: "workspace",
                id: actor.tenant.clone(),
            })?;
        let s = |k: &str| {
            item.get(k)
                .and_then(Value::as_s)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Tenant {
            id: actor.tenant.clone(),
            name: s("name"),
            zone: s("zone"),
            currency: s("currency"),
            tax_rate: s("tax_rate").parse().unwrap_or_default(),
        })
    }

    /// Plans a new tenant's settings (seeding and sign-up).
    pub fn create(&self, actor: &Actor, tenant: &Tenant) -> Result<Change<Tenant>, BookingError> {
        actor.require(rights::AGENT_ACCESS_MANAGE)?;
        if tenant.zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(BookingError::invalid(
                "zone",
                format!("{:?} is not an IANA time zone", tenant.zone),
            ));
        }
        if tenant.tax_rate < Decimal::ZERO || tenant.tax_rate > Decimal::from(100) {
            return Err(BookingError::invalid(
                "tax_rate",
                "must be between 0 and 100 percent",
            ));
        }
        let mut item = Item::new();
        item.insert("name".into(), Value::s(&tenant.name));
        item.insert("zone".into(), Value::s(&tenant.zone));
        item.insert("currency".into(), Value::s(&tenant.currency));
        item.insert("tax_rate".into(), Value::s(tenant.tax_rate.to_string()));
        let mut change = Change::new(tenant.clone());
        change.push(
            Put::new(keys::tenant(&actor.tenant), item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("this workspace exists already".into()),
        );
        Ok(change)
    }
}
