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
    /// A tool requires a right the product's catalogue lacks.
    UnknownRight,
    /// A product tool is named like the platform's confirmation tool.
    ReservedName,
    /// A read tool asks for approval in the product.
    ApprovalOnARead,
    /// Nothing the app can refuse at the start: its API route's handler forgets to check the
    /// right its tool requires (the platform checks it).
    ApiForgetsRights,
}

/// The right `delete_note` requires.
pub(crate) const NOTES_DELETE: &str = "notes:delete";

/// What the forgetful route answers when it runs.
pub(crate) const DELETED: &str = "deleted, no questions asked";

/// Arguments of `delete_note`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoteInput {
    /// The note.
    note: String,
}

/// What `delete_note` did.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Deleted {
    /// The note.
    deleted: String,
}

/// `delete_note`: requires `notes:delete`.
#[derive(Debug)]
struct DeleteNote;

/// A read tool, under the name `NAME`.
#[derive(Debug)]
struct ReadNote<const CONFIRM: bool>;

impl<const CONFIRM: bool> mcp_pipeline::Tool for ReadNote<CONFIRM> {
    type Input = NoteInput;
    type Output = Deleted;
    const NAME: &'static str = if CONFIRM {
        "confirm_action"
    } else {
        "get_note"
    };
    const TITLE: &'static str = "Read a note";
    const DESCRIPTION: &'static str =
        "Returns a note. Changes nothing. Example: {\"note\": \"not_1\"}";
    type Effect = mcp_pipeline::effects::Read;
    const POLICY: mcp_pipeline::Policy = mcp_pipeline::Policy::CORE.requires(&["notes:read"]);

    async fn call(
        &self,
        _: mcp_pipeline::ToolContext<Self::Effect>,
        input: NoteInput,
    ) -> Result<mcp_pipeline::Success<Deleted>, mcp_pipeline::CallError> {
        Ok(mcp_pipeline::Success::new(
            "Read.",
            Deleted {
                deleted: input.note,
            },
        ))
    }
}

impl mcp_pipeline::Tool for DeleteNote {
    type Input = NoteInput;
    type Output = Deleted;
    const NAME: &'static str = "delete_note";
    const TITLE: &'static str = "Delete a note";
    const DESCRIPTION: &'static str = "Prepares deleting a note; nothing is deleted until confirm_action. Example: {\"note\": \"not_1\"}";
    type Effect = mcp_pipeline::effects::Delete;
    const POLICY: mcp_pipeline::Policy = mcp_pipeline::Policy::CORE.requires(&[NOTES_DELETE]);

    async fn call(
        &self,
        ctx: mcp_pipeline::ToolContext<Self::Effect>,
        input: NoteInput,
    ) -> Result<mcp_pipeline::Prepared<Deleted>, mcp_pipeline::CallError> {
        let preview = ctx
            .writes
            .preview(format!("Delete {}", input.note), serde_json::json!({}));
        Ok(preview.answer(mcp_pipeline::Success::new(
            "Deleted.",
            Deleted {
                deleted: input.note,
            },
        )))
    }
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
        Box::pin(async {
            web::api::answer(http::StatusCode::OK, &serde_json::json!({"done": DELETED}))
        })
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
        &["notes:read", NOTES_DELETE]
    }

    fn roles(&self) -> identity::RoleCatalog {
        |role| match role {
            "owner" => &["notes:read", NOTES_DELETE],
            "viewer" => &["notes:read"],
            _ => &[],
        }
    }

    fn read_right(&self) -> &'static str {
        "notes:read"
    }

    fn register(&self, registry: &mut Registry, _: &ProductContext) -> Result<(), RegistryError> {
        use mcp_pipeline::ToolSpec;
        match self.0 {
            Mistake::ApiForgetsRights => registry.register(ToolSpec::new(DeleteNote)),
            Mistake::UnknownRight => {
                registry.register(ToolSpec::new(ReadNote::<false>).requires("notes:unknown"))
            }
            Mistake::ReservedName => registry.register(ToolSpec::new(ReadNote::<true>)),
            Mistake::ApprovalOnARead => {
                registry.register(ToolSpec::new(ReadNote::<false>).approval_in_product())
            }
            Mistake::RouteWithoutTool | Mistake::PrefixTwice => Ok(()),
        }
    }

    fn read_ahead(&self) -> ReadAhead {
        ReadAhead(Arc::new(|_, _| None))
    }

    fn records(&self, _: &ProductContext) -> Option<Arc<dyn Records>> {
        matches!(self.0, Mistake::PrefixTwice).then(|| Arc::new(Kinds) as Arc<dyn Records>)
    }

    fn api(&self, _: &ProductContext) -> Option<Arc<dyn web::ProductApi>> {
        matches!(
            self.0,
            Mistake::RouteWithoutTool | Mistake::ApiForgetsRights
        )
        .then(|| Arc::new(Routes) as Arc<dyn web::ProductApi>)
    }
}
