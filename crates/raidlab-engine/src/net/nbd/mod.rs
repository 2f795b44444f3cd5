//! The NBD server: the protocol's vocabulary ([`protocol`]), what is exported
//! ([`export`]), the sockets it listens on ([`socket`]: TCP or a private Unix socket),
//! its transmission slots ([`slots`]), the handshake and transmission ([`server`]) and
//! the structured-reply extension with block status ([`structured`]).
//! Each file imports only those before it in this list: protocol, export, socket,
//! slots, structured, server.

pub mod export;
pub mod protocol;
pub mod server;
pub mod slots;
pub mod socket;
pub mod structured;
