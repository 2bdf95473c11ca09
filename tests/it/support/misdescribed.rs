//! A product that describes itself wrongly, one mistake at a time: the app must refuse to
//! start with it, naming the mistake.

use std::sync::Arc;

use app::{Product, ProductContext};
use mcp_pipeline::records::{Attribute, AttributeType, RecordKind, Records};
use mcp_pipeline::{ReadAhead, Registry, RegistryError};

/// The one mistake the product makes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mistake {
    /// An API route names a tool that is not registered.
    RouteWithoutTool,
    /// Two record kinds share a handle prefix.
    PrefixTwice,
}

#[derive(Debug)]
pub(crate) struct Misdescribed(pub(crate) Mistake);

#[derive(Debug)]
struct Kinds;

const NOTE: RecordKind = RecordKind {
    prefix: "not",
    noun: "note",
    path: "notes",
    attributes: &[Attribute::new("text", "Text", AttributeType::String)],
};

impl Records for Kinds {
    fn kinds(&self) -> &'static [RecordKind] {
        const TWICE: &[RecordKind] = &[
            NOTE,
            RecordKind {
                path: "memos",
                noun: "memo",
                ..NOTE
            },
        ];
        TWICE
    }

    fn read<'a>(
        &'a self,
        _: &'a mcp_pipeline::records::Reader,
        _: &'static RecordKind,
        _: &'a str,
    ) -> mcp_pipeline::BoxFuture<
        'a,
        Result<mcp_pipeline::records::Record, mcp_pipeline::records::RecordError>,
    > {
        Box::pin(async { Err(mcp_pipeline::records::RecordError::NotFound) })
    }
}

#[derive(Debug)]
struct Routes;

impl web::ProductApi for Routes {
    fn routes(&self) -> &'static [web::ApiRoute] {
        &[web::ApiRoute {
            method: "DELETE",
            path: &["notes", "{handle}"],
            tool: "delete_note",
        }]
    }

    fn handle<'a>(&'a self, _: web::ApiCall<'a>) -> mcp_pipeline::BoxFuture<'a, web::WebResponse> {
        Box::pin(async { web::api::no_such_route() })
    }
}

impl Product for Misdescribed {
    fn name(&self) -> &'static str {
        "misdescribed"
    }

    fn instructions(&self) -> String {
        "A product that describes itself wrongly.".into()
    }

    fn rights(&self) -> &'static [&'static str] {
        &[]
    }

    fn roles(&self) -> identity::RoleCatalog {
        |_| &[]
    }

    fn read_right(&self) -> &'static str {
        "notes:read"
    }

    fn register(&self, _: &mut Registry, _: &ProductContext) -> Result<(), RegistryError> {
        Ok(())
    }

    fn read_ahead(&self) -> ReadAhead {
        ReadAhead(Arc::new(|_, _| None))
    }

    fn records(&self, _: &ProductContext) -> Option<Arc<dyn Records>> {
        matches!(self.0, Mistake::PrefixTwice).then(|| Arc::new(Kinds) as Arc<dyn Records>)
    }

    fn api(&self, _: &ProductContext) -> Option<Arc<dyn web::ProductApi>> {
        matches!(self.0, Mistake::RouteWithoutTool)
            .then(|| Arc::new(Routes) as Arc<dyn web::ProductApi>)
    }
}
