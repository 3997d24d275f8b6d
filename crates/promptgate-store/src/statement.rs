//! A statement's round trip as one short chain: the SQL, `.with_values(…)` for its `$1, $2, …`, and
//! `.fetch_all`, `.fetch_optional`, `.fetch_one` or `.execute` on the pool or a transaction, named
//! by its operation so that `observed` records it. Every repository method wrote these steps out as
//! a chain of one `bind` per value plus the run and the record; here they are written once.
//!
//! The values are a tuple (`()` for none, `(user_id,)` for one), bound in order. Errors stay
//! `sqlx::Error`, so a site that tells a unique-key conflict from a failure still can.

use sqlx::any::{Any, AnyArguments, AnyQueryResult, AnyRow};
use sqlx::query::Query;
use sqlx::{Encode, Executor, SqlSafeStr, Type};

use crate::observed::Observed;

type Bound<'q> = Query<'q, Any, AnyArguments>;

/// The values of a statement's parameters, bound in order.
pub(crate) trait Binds<'t> {
    fn bind_to<'q>(self, query: Bound<'q>) -> Bound<'q>;
}

impl Binds<'_> for () {
    fn bind_to<'q>(self, query: Bound<'q>) -> Bound<'q> {
        query
    }
}

/// `Binds` for tuples up to the longest parameter list a statement here has; a function cannot be
/// generic over a tuple's length, so each length gets its impl from this macro.
macro_rules! binds_for_tuple {
    ($($value:ident),+) => {
        impl<'t, $($value: Encode<'t, Any> + Type<Any>),+> Binds<'t> for ($($value,)+) {
            #[allow(non_snake_case, reason = "the type parameters double as the values' names")]
            fn bind_to<'q>(self, query: Bound<'q>) -> Bound<'q> {
                let ($($value,)+) = self;
                query$(.bind($value))+
            }
        }
    };
}

binds_for_tuple!(A);
binds_for_tuple!(A, B);
binds_for_tuple!(A, B, C);
binds_for_tuple!(A, B, C, D);
binds_for_tuple!(A, B, C, D, E);
binds_for_tuple!(A, B, C, D, E, F);
binds_for_tuple!(A, B, C, D, E, F, G);
binds_for_tuple!(A, B, C, D, E, F, G, H);
binds_for_tuple!(A, B, C, D, E, F, G, H, I);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K, L);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K, L, M);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O);
binds_for_tuple!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P);

/// SQL text (a literal, or `sqlx::AssertSqlSafe` around a built one) that can take its values.
pub(crate) trait Sql: SqlSafeStr + Sized {
    fn with_values<'q, 't>(self, values: impl Binds<'t>) -> Statement<'q> {
        Statement(values.bind_to(sqlx::query(self)))
    }
}

impl<S: SqlSafeStr> Sql for S {}

/// Where a statement runs: the pool, or a connection or transaction of it.
pub(crate) trait On<'c>: Executor<'c, Database = Any> {}

impl<'c, E: Executor<'c, Database = Any>> On<'c> for E {}

/// A statement with its values bound, waiting to run.
pub(crate) struct Statement<'q>(Bound<'q>);

impl Statement<'_> {
    /// Every row the statement returns.
    pub(crate) async fn fetch_all<'c>(self, on: impl On<'c>, op: &'static str) -> sqlx::Result<Vec<AnyRow>> {
        self.0.fetch_all(on).observed(op).await
    }

    /// The statement's first row, if it returns any.
    pub(crate) async fn fetch_optional<'c>(
        self,
        on: impl On<'c>,
        op: &'static str,
    ) -> sqlx::Result<Option<AnyRow>> {
        self.0.fetch_optional(on).observed(op).await
    }

    /// The statement's one row; none is `RowNotFound`.
    pub(crate) async fn fetch_one<'c>(self, on: impl On<'c>, op: &'static str) -> sqlx::Result<AnyRow> {
        self.0.fetch_one(on).observed(op).await
    }

    /// Runs a write; the result says how many rows it changed.
    pub(crate) async fn execute<'c>(self, on: impl On<'c>, op: &'static str) -> sqlx::Result<AnyQueryResult> {
        self.0.execute(on).observed(op).await
    }
}
