//! What the engine says over sockets: the NBD export ([`nbd`]) with its TLS
//! ([`tls`], [`psk`]), byte budget ([`budget`]) and rate-limited log ([`log_limit`]),
//! and the served array's control socket ([`control`]) in its private directory
//! ([`private_socket`]).

pub mod budget;
pub mod control;
pub mod log_limit;
pub mod nbd;
pub mod private_socket;
#[cfg(feature = "psk")]
pub mod psk;
pub mod tls;
