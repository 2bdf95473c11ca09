//! DynamoDB's errors sorted into what the store can act on. Nothing here leaves the crate:
//! callers only ever see `store::StoreError`.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::CancellationReason;
use store::{Invalid, StoreError};

use crate::convert::Raw;

/// A failed DynamoDB call, sorted.
#[derive(Debug)]
pub(crate) enum Failure {
    /// `ConditionalCheckFailedException`, with the item when it was asked for.
    ConditionFailed(Option<Raw>),
    /// `TransactionCanceledException`, one reason per operation.
    Cancelled(Vec<CancellationReason>),
    /// `ValidationException`: the request was refused as malformed.
    Validation(String),
    /// Anything else, already mapped.
    Store(StoreError),
}

/// The error of an operation that knows which modeled exceptions carry data.
pub(crate) trait OperationError:
    ProvideErrorMetadata + std::error::Error + Send + Sync
{
    /// The modeled exceptions the store handles specially; `Err(self)` for the rest.
    fn special(self) -> Result<Failure, Self>
    where
        Self: Sized;
}

macro_rules! no_special {
    ($($t:ty),* $(,)?) => {$(
        impl OperationError for $t {
            fn special(self) -> Result<Failure, Self> {
                Err(self)
            }
        }
    )*};
}

use aws_sdk_dynamodb::operation::{
    batch_get_item::BatchGetItemError, create_table::CreateTableError,
    delete_item::DeleteItemError, describe_table::DescribeTableError,
    describe_time_to_live::DescribeTimeToLiveError, get_item::GetItemError, put_item::PutItemError,
    query::QueryError, transact_write_items::TransactWriteItemsError, update_item::UpdateItemError,
    update_time_to_live::UpdateTimeToLiveError,
};

no_special!(
    BatchGetItemError,
    CreateTableError,
    DescribeTableError,
    DescribeTimeToLiveError,
    GetItemError,
    QueryError,
    UpdateTimeToLiveError,
);

impl OperationError for PutItemError {
    fn special(self) -> Result<Failure, Self> {
        match self {
            PutItemError::ConditionalCheckFailedException(e) => {
                Ok(Failure::ConditionFailed(e.item))
            }
            other => Err(other),
        }
    }
}

impl OperationError for UpdateItemError {
    fn special(self) -> Result<Failure, Self> {
        match self {
            UpdateItemError::ConditionalCheckFailedException(e) => {
                Ok(Failure::ConditionFailed(e.item))
            }
            other => Err(other),
        }
    }
}

impl OperationError for DeleteItemError {
    fn special(self) -> Result<Failure, Self> {
        match self {
            DeleteItemError::ConditionalCheckFailedException(e) => {
                Ok(Failure::ConditionFailed(e.item))
            }
            other => Err(other),
        }
    }
}

impl OperationError for TransactWriteItemsError {
    fn special(self) -> Result<Failure, Self> {
        match self {
            TransactWriteItemsError::TransactionCanceledException(e) => Ok(Failure::Cancelled(
                e.cancellation_reasons.unwrap_or_default(),
            )),
            other => Err(other),
        }
    }
}

/// Sorts any SDK error of a DynamoDB call.
pub(crate) fn failure<E, R>(err: SdkError<E, R>) -> Failure
where
    E: OperationError + 'static,
    R: std::fmt::Debug + 'static,
{
    let text = DisplayErrorContext(&err).to_string();
    match err {
        SdkError::ServiceError(service) => match service.into_err().special() {
            Ok(special) => special,
            Err(other) => by_code(other.code(), other.message().unwrap_or(&text)),
        },
        // Nothing or nothing usable came back: the request may or may not have been applied,
        // and trying again later may work.
        SdkError::ConstructionFailure(_)
        | SdkError::TimeoutError(_)
        | SdkError::DispatchFailure(_)
        | SdkError::ResponseError(_) => Failure::Store(StoreError::Unavailable(text)),
        // `SdkError` is non-exhaustive; a kind added later is treated like the ones above.
        _ => Failure::Store(StoreError::Unavailable(text)),
    }
}

/// Sorts a service error by its code (modeled or not; `ValidationException` never is).
fn by_code(code: Option<&str>, message: &str) -> Failure {
    let unavailable = |code: &str| {
        Failure::Store(StoreError::Unavailable(format!(
            "DynamoDB {code}: {message}"
        )))
    };
    match code {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded"
            | "TransactionInProgressException"
            // A single-item write met a transaction on the same item, or a replica's write:
            // the same remedy as throttling, back off and retry.
            | "TransactionConflictException"
            | "ReplicatedWriteConflictException",
        ) => Failure::Store(StoreError::Throttled),
        Some("ValidationException") => Failure::Validation(message.to_owned()),
        Some("ConditionalCheckFailedException") => Failure::ConditionFailed(None),
        // Everything else (InternalServerError, ServiceUnavailable, ResourceNotFoundException,
        // IdempotentParameterMismatchException, access and endpoint errors, …) means the
        // store cannot serve the request as deployed right now.
        Some(code) => unavailable(code),
        None => unavailable("error"),
    }
}

/// The `Invalid` closest to a validation message DynamoDB gave for a request the store's own
/// checks accepted (`size` is the item size when the request writes a whole item).
pub(crate) fn invalid_from_message(message: &str, attribute: &str, size: Option<usize>) -> Invalid {
    let lower = message.to_ascii_lowercase();
    match size {
        Some(size) if lower.contains("size") => Invalid::ItemTooLarge { size },
        _ => Invalid::WrongType {
            attribute: attribute.to_owned(),
            reason: message.to_owned(),
        },
    }
}

/// A failure that is not the one a call expected, as a store error.
pub(crate) fn unexpected(failure: Failure, attribute: &str, size: Option<usize>) -> StoreError {
    match failure {
        Failure::Store(e) => e,
        Failure::Validation(message) => {
            StoreError::Invalid(invalid_from_message(&message, attribute, size))
        }
        Failure::ConditionFailed(_) => StoreError::ConditionFailed { old: None },
        Failure::Cancelled(reasons) => StoreError::Unavailable(format!(
            "DynamoDB cancelled a single-item request ({} reasons)",
            reasons.len()
        )),
    }
}
