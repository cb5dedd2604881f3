//! API tests for hosts, profiles, script versions, the iPXE script and the DHCP APIs.
