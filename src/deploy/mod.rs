//! One run spread over many machines: Kubernetes Jobs, Docker Swarm services, and what their agents share.

pub mod k8s;
pub mod orchestrator;
pub mod swarm;
