//! Typed arena ids shared by the workload, the loop-nest IR and traces.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The arena index.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// An integer variable: a loop variable or a block iteration variable.
    VarId,
    "v"
);
id_type!(
    /// A tensor (workload tensor or local buffer).
    TensorId,
    "t"
);
id_type!(
    /// A loop in a loop nest.
    LoopId,
    "loop"
);
id_type!(
    /// A block (one computation) in a loop nest.
    BlockId,
    "block"
);
