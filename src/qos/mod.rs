//! QoS measurement helpers and the load model (being written).
