/**
 * Replies recorded from a real BIRD 2.0.12 control socket (two nodes meshed over a veth pair in
 * network namespaces, and one BIRD before its sessions came up), byte for byte.
 */

export const hello = `0001 BIRD 2.0.12 ready.
`;

export const protocolsEstablished = `2002-Name       Proto      Table      State  Since         Info
1002-static1    Static     master4    up     09:07:34.637  
 kernel1    Kernel     master4    up     09:07:34.637  
 device1    Device     ---        up     09:07:34.637  
 direct1    Direct     ---        up     09:07:34.637  
 Mesh_198_18_0_2 BGP        ---        up     09:07:36.607  Established   
0000 
`;

export const protocolsPeerSide = `2002-Name       Proto      Table      State  Since         Info
1002-static1    Static     master4    up     09:07:34.639  
 kernel1    Kernel     master4    up     09:07:34.639  
 device1    Device     ---        up     09:07:34.639  
 direct1    Direct     ---        up     09:07:34.639  
 Mesh_198_18_0_1 BGP        ---        up     09:07:36.607  Established   
0000 
`;

export const routes = `1007-Table master4:
 198.19.0.0/26        blackhole [static1 09:07:34.637] * (200)
 198.18.0.0/24        unicast [direct1 09:07:34.638] * (240)
 \tdev bbp-a
 198.19.0.64/26       unicast [Mesh_198_18_0_2 09:07:36.638] * (100) [i]
 \tvia 198.18.0.2 on bbp-a
0000 
`;

export const routesAll = `1007-Table master4:
 198.19.0.0/26        blackhole [static1 09:07:34.637] * (200)
1008-\tType: static univ
1007-198.18.0.0/24        unicast [direct1 09:07:34.638] * (240)
 \tdev bbp-a
1008-\tType: device univ
1007-198.19.0.64/26       unicast [Mesh_198_18_0_2 09:07:36.638] * (100) [i]
 \tvia 198.18.0.2 on bbp-a
1008-\tType: BGP univ
1012-\tBGP.origin: IGP
 \tBGP.as_path: 
 \tBGP.next_hop: 198.18.0.2
 \tBGP.local_pref: 100
0000 
`;

export const status = `1000-BIRD 2.0.12
1011-Router ID is 198.18.0.1
 Hostname is vm
 Current server time is 2026-11-23 09:07:42.746
 Last reboot on 2026-11-23 09:07:34.637
 Last reconfiguration on 2026-11-23 09:07:34.637
0013 Daemon is up and running
`;

export const configureOk = `0002-Reading configuration from /tmp/bbx/probe/a/bird.cfg
0003 Reconfigured
`;

export const configureMissingFile = `0002-Reading configuration from /nonexistent.cfg
8002 /nonexistent.cfg: No such file or directory
`;

export const configureSyntaxError = `0002-Reading configuration from /tmp/bbx/probe/a/bird.cfg
8002 /tmp/bbx/probe/a/bird.cfg:43:11 syntax error, unexpected ';', expecting NUM or CF_SYM_KNOWN or '('
`;

export const commandSyntaxError = `9001 syntax error, unexpected PROTOCOL
`;

export const protocolsStarting = `2002-Name       Proto      Table      State  Since         Info
1002-static1    Static     master4    up     09:03:46.100  
 kernel1    Kernel     master4    up     09:03:46.100  
 device1    Device     ---        up     09:03:46.100  
 direct1    Direct     ---        up     09:03:46.100  
 Mesh_198_18_0_2 BGP        ---        start  09:03:46.100  Passive       
 Global_198_18_0_9 BGP        ---        start  09:03:46.100  Active        Socket: Network is unreachable
0000 
`;
