//! Why a tuple was discarded: the closed set of drop reasons and the per-reason counters
//! every ledger keeps (metrics label values come from `DropReason::label`).

/// Why a tuple was discarded (a closed set; metrics label values come from `label`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    ShedRandom,
    ShedSemantic,
    ShedWindow,
    QueueFull,
    /// Input a source could not parse into a tuple of the stream's schema: counted per
    /// stream, before any query sees it.
    Malformed,
    /// Input still queued for a query when it was removed without flushing.
    Withdrawn,
}

impl DropReason {
    pub const ALL: [DropReason; 6] = [
        DropReason::ShedRandom,
        DropReason::ShedSemantic,
        DropReason::ShedWindow,
        DropReason::QueueFull,
        DropReason::Malformed,
        DropReason::Withdrawn,
    ];
    /// How many reasons there are: the length of every per-reason counter array.
    pub const COUNT: usize = DropReason::ALL.len();

    pub fn label(self) -> &'static str {
        match self {
            DropReason::ShedRandom => "shed-random",
            DropReason::ShedSemantic => "shed-semantic",
            DropReason::ShedWindow => "shed-window",
            DropReason::QueueFull => "queue-full",
            DropReason::Malformed => "malformed",
            DropReason::Withdrawn => "withdrawn",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Counts per reason.
pub type DropCounts = [u64; DropReason::COUNT];
