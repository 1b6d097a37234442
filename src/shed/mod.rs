//! Load shedding decisions (being written).
