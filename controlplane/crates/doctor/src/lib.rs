//! Bootlane's boot doctor ([`doctor`]): one run checks every interface the DHCP server
//! serves for what keeps machines from booting before one is switched on, and reports
//! each finding with its severity and the fix.

pub mod doctor;
