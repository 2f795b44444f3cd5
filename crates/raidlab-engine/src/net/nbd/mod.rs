//! The NBD server: the protocol's vocabulary ([`protocol`]), what is exported
//! ([`export`]), the handshake and transmission ([`server`]) and the structured-reply
//! extension with block status ([`structured`]).
//! Each file imports only those before it in this list: protocol, export, structured,
//! server.

pub mod export;
pub mod protocol;
pub mod server;
pub mod structured;
