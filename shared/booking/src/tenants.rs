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

    /// Plans a new tenant's settings (seeding and sign-up): a valid id (the actor's tenant),
    /// an IANA zone, a supported currency and a tax rate from 0 to 100 percent.
    pub fn create(&self, actor: &Actor, tenant: &Tenant) -> Result<Change<Tenant>, BookingError> {
        actor.require(rights::AGENT_ACCESS_MANAGE)?;
        store::tenant_id::check(&tenant.id).map_err(|why| BookingError::invalid("tenant", why))?;
        if tenant.id != actor.tenant {
            return Err(BookingError::invalid(
                "tenant",
                "a workspace is created by someone acting in it",
            ));
        }
        let name = crate::text::written("name", &tenant.name, 100, crate::text::Lines::One)?;
        crate::money::Currency::parse(&tenant.currency).map_err(|e| BookingError::Money {
            field: "currency",
            error: e,
        })?;
        if crate::time::parse_zone(&tenant.zone).is_err() {
            return Err(BookingError::invalid(
                "zone",
                format!("{:?} is not an IANA time zone", tenant.zone),
            ));
        }
        // The rule quotes read it by (0 to 100 percent, at most four decimals): a rate they
        // could not read would be stored only to refuse every later quote.
        crate::money::TaxRate::parse(&tenant.tax_rate.to_string()).map_err(|e| {
            BookingError::Money {
                field: "tax_rate",
                error: e,
            }
        })?;
        let mut item = Item::new();
        item.insert("name".into(), Value::s(&name));
        item.insert("zone".into(), Value::s(&tenant.zone));
        item.insert("currency".into(), Value::s(&tenant.currency));
        item.insert("tax_rate".into(), Value::s(tenant.tax_rate.to_string()));
        let mut listed = Item::new();
        listed.insert("name".into(), Value::s(&name));
        let mut change = Change::new(tenant.clone());
        change.push(
            Put::new(keys::tenant(&tenant.id), item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("this workspace exists already".into()),
        );
        change.push(
            Put::new(keys::listed_tenant(&tenant.id), listed).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("this workspace exists already".into()),
        );
        Ok(change)
    }

    /// Whether the workspace `tenant` exists.
    pub async fn exists(&self, tenant: &str) -> Result<bool, BookingError> {
        Ok(self.store.get(&keys::tenant(tenant)).await?.is_some())
    }

    /// Every workspace's id and name, by id (for operators and the command line).
    pub async fn list(&self) -> Result<Vec<(String, String)>, BookingError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .store
                .query(store::Query::partition(keys::LISTED_TENANTS).after(cursor))
                .await?;
            out.extend(page.items.into_iter().map(|(k, i)| {
                let name = i.get("name").and_then(Value::as_s).unwrap_or_default();
                (k.sk, name.to_owned())
            }));
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}
