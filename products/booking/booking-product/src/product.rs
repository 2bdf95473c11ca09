//! The booking product behind the seam (ADR 49): its tools, rights, roles, records and pages,
//! handed to the platform through [`Product`] like any team's product.

use std::collections::BTreeMap;
use std::sync::Arc;

use app::demo::Demo;
use app::{Product, ProductContext, WorkspaceSetting};
use mcp_pipeline::records::Records;
use mcp_pipeline::{NameResolver, ReadAhead, Registry, RegistryError};

/// What a booking workspace takes beside its name and zone: how it writes prices.
const SETTINGS: &[WorkspaceSetting] = &[
    WorkspaceSetting {
        name: "currency",
        help: "The currency of its quotes, ISO 4217, e.g. EUR",
        example: "EUR",
    },
    WorkspaceSetting {
        name: "tax_rate",
        help: "The tax rate of its quotes in percent, e.g. 19",
        example: "19",
    },
];

/// The field-service booking product: bookings, customers, technicians, quotes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Booking;

impl Booking {
    /// The product, shared.
    pub fn shared() -> app::SharedProduct {
        Arc::new(Booking)
    }

    /// The services the tools call, reading through the call's read-ahead.
    fn services(cx: &ProductContext) -> crate::Services {
        Self::services_on(&cx.store, cx)
    }

    /// The services over `store`.
    fn services_on(store: &Arc<dyn store::Store>, cx: &ProductContext) -> crate::Services {
        let randomness = &cx.randomness;
        crate::Services {
            customers: booking::Customers::new(Arc::clone(store))
                .with_randomness(Arc::clone(randomness)),
            technicians: booking::Technicians::new(Arc::clone(store))
                .with_randomness(Arc::clone(randomness)),
            bookings: booking::Bookings::new(Arc::clone(store))
                .with_randomness(Arc::clone(randomness)),
            quotes: booking::Quotes::new(Arc::clone(store)).with_randomness(Arc::clone(randomness)),
            alerts: booking::Alerts::new(Arc::clone(store)),
            console_base: cx.console_base.clone(),
        }
    }
}

impl Product for Booking {
    fn name(&self) -> &'static str {
        "booking"
    }

    fn instructions(&self) -> String {
        "gatehouse exposes a field-service booking product. Read before you write; every write \
         tool says what it changes."
            .into()
    }

    fn rights(&self) -> &'static [&'static str] {
        booking::rights::ALL
    }

    fn roles(&self) -> identity::RoleCatalog {
        booking::rights::for_role
    }

    fn read_right(&self) -> &'static str {
        booking::rights::BOOKINGS_READ
    }

    fn register(&self, registry: &mut Registry, cx: &ProductContext) -> Result<(), RegistryError> {
        crate::register(registry, &Self::services(cx))
    }

    fn names(&self, cx: &ProductContext) -> Option<Arc<dyn NameResolver>> {
        Some(Arc::new(crate::NameLookup::new(Self::services(cx))))
    }

    fn read_ahead(&self) -> ReadAhead {
        // Handles in a call's arguments name the product's records, read with the credential.
        ReadAhead(Arc::new(booking::keys::of_handle))
    }

    fn workspace_settings(&self) -> &'static [WorkspaceSetting] {
        SETTINGS
    }

    fn new_workspace(
        &self,
        tenant: &store::TenantId,
        settings: &BTreeMap<String, String>,
    ) -> Result<Vec<store::TransactOp>, String> {
        if let Some(other) = settings
            .keys()
            .find(|k| !SETTINGS.iter().any(|s| s.name == *k))
        {
            return Err(format!("a booking workspace takes no setting {other:?}"));
        }
        let given = |name: &str| {
            settings
                .get(name)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| format!("a booking workspace needs its {name}"))
        };
        let tax = given("tax_rate")?;
        let prices = booking::Prices {
            currency: given("currency")?.trim().to_owned(),
            tax_rate: tax
                .trim()
                .parse()
                .map_err(|_| format!("the tax rate {tax:?} is not a number like 19 or 7.5"))?,
        };
        let op = prices.plan(tenant).map_err(|e| e.to_string())?;
        Ok(vec![op])
    }

    fn records(&self, cx: &ProductContext) -> Option<Arc<dyn Records>> {
        Some(Arc::new(crate::records::BookingRecords {
            store: Arc::clone(&cx.plain_store),
        }))
    }

    fn api(&self, cx: &ProductContext) -> Option<Arc<dyn web::ProductApi>> {
        Some(Arc::new(crate::api::BookingApi {
            store: Arc::clone(&cx.plain_store),
            services: Self::services_on(&cx.plain_store, cx),
        }))
    }

    fn demo(&self) -> Option<Demo> {
        Some(crate::demo::DEMO)
    }
}
