//! What a result says: a sweep's analysis (peak, knee, plateau), CI gates, agents' documents merged.

pub mod analysis;
pub mod gates;
pub mod merge;
