//! [`ArchiveAt`]: where an archive lives. The archive is a pattern (of buckets and of
//! documents), so its location is pattern-core's, not the store contract's.

/// Where an archive lives (the archive pattern: [`bucket::archive`](crate::bucket::archive),
/// [`document::archive`](crate::document::archive())): a collection of a store, the live store
/// or another.
#[derive(Debug)]
pub struct ArchiveAt<'a, A> {
    /// The archive's store.
    pub store: &'a A,
    /// The archive's collection (not the live one, when the store is the same).
    pub collection: &'a str,
}

impl<A> Clone for ArchiveAt<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for ArchiveAt<'_, A> {}

impl<A> ArchiveAt<'_, A> {
    /// Whether the archive is on `live` itself (the same handle; a clone of it counts as
    /// another store, which is slower but as correct).
    pub fn is_on<S>(&self, live: &S) -> bool {
        std::ptr::eq(
            (live as *const S).cast::<()>(),
            (self.store as *const A).cast::<()>(),
        )
    }
}
