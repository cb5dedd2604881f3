//! The machines themselves: BMC power control (IPMI and Redfish, passwords encrypted at rest), wake-on-LAN with schedules, and network diagnostics (ping and traceroute from the server).

pub mod bmc;
pub mod netdiag;
pub mod wol;
