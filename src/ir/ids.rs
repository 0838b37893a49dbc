//! Typed indexes into the [`Program`](super::Program) tables.

macro_rules! id {
    ($(#[$doc:meta] $name:ident),*) => {$(
        #[$doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`.
            #[must_use]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of index `i`.
            ///
            /// # Panics
            /// When `i` does not fit in 32 bits (no program is that large).
            #[must_use]
            pub fn from_index(i: usize) -> Self {
                Self(u32::try_from(i).expect("fewer than 2^32 items"))
            }
        }
    )*};
}

id!(
    /// A node of one contract.
    NodeId,
    /// A contract of the program.
    ContractId,
    /// A tool of the program.
    ToolId,
    /// An agent of the program.
    AgentId,
    /// A `provider` declaration of the program.
    ProviderId
);
