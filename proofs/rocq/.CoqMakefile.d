Semantics.vo Semantics.glob Semantics.v.beautified Semantics.required_vo: Semantics.v 
Semantics.vio: Semantics.v 
Semantics.vos Semantics.vok Semantics.required_vos: Semantics.v 
Instances.vo Instances.glob Instances.v.beautified Instances.required_vo: Instances.v Semantics.vo
Instances.vio: Instances.v Semantics.vio
Instances.vos Instances.vok Instances.required_vos: Instances.v Semantics.vos
Tactics.vo Tactics.glob Tactics.v.beautified Tactics.required_vo: Tactics.v Semantics.vo
Tactics.vio: Tactics.v Semantics.vio
Tactics.vos Tactics.vok Tactics.required_vos: Tactics.v Semantics.vos
Rules_let.vo Rules_let.glob Rules_let.v.beautified Rules_let.required_vo: Rules_let.v Semantics.vo
Rules_let.vio: Rules_let.v Semantics.vio
Rules_let.vos Rules_let.vok Rules_let.required_vos: Rules_let.v Semantics.vos
Rules_access.vo Rules_access.glob Rules_access.v.beautified Rules_access.required_vo: Rules_access.v Semantics.vo
Rules_access.vio: Rules_access.v Semantics.vio
Rules_access.vos Rules_access.vok Rules_access.required_vos: Rules_access.v Semantics.vos
Rules_guard.vo Rules_guard.glob Rules_guard.v.beautified Rules_guard.required_vo: Rules_guard.v Semantics.vo
Rules_guard.vio: Rules_guard.v Semantics.vio
Rules_guard.vos Rules_guard.vok Rules_guard.required_vos: Rules_guard.v Semantics.vos
Rules_loops.vo Rules_loops.glob Rules_loops.v.beautified Rules_loops.required_vo: Rules_loops.v Semantics.vo
Rules_loops.vio: Rules_loops.v Semantics.vio
Rules_loops.vos Rules_loops.vok Rules_loops.required_vos: Rules_loops.v Semantics.vos
Rules_algebra.vo Rules_algebra.glob Rules_algebra.v.beautified Rules_algebra.required_vo: Rules_algebra.v Semantics.vo
Rules_algebra.vio: Rules_algebra.v Semantics.vio
Rules_algebra.vos Rules_algebra.vok Rules_algebra.required_vos: Rules_algebra.v Semantics.vos
Rules_reshape.vo Rules_reshape.glob Rules_reshape.v.beautified Rules_reshape.required_vo: Rules_reshape.v Semantics.vo
Rules_reshape.vio: Rules_reshape.v Semantics.vio
Rules_reshape.vos Rules_reshape.vok Rules_reshape.required_vos: Rules_reshape.v Semantics.vos
Proofs_let.vo Proofs_let.glob Proofs_let.v.beautified Proofs_let.required_vo: Proofs_let.v Semantics.vo Tactics.vo Rules_let.vo
Proofs_let.vio: Proofs_let.v Semantics.vio Tactics.vio Rules_let.vio
Proofs_let.vos Proofs_let.vok Proofs_let.required_vos: Proofs_let.v Semantics.vos Tactics.vos Rules_let.vos
Proofs_access.vo Proofs_access.glob Proofs_access.v.beautified Proofs_access.required_vo: Proofs_access.v Semantics.vo Tactics.vo Rules_access.vo
Proofs_access.vio: Proofs_access.v Semantics.vio Tactics.vio Rules_access.vio
Proofs_access.vos Proofs_access.vok Proofs_access.required_vos: Proofs_access.v Semantics.vos Tactics.vos Rules_access.vos
Proofs_guard.vo Proofs_guard.glob Proofs_guard.v.beautified Proofs_guard.required_vo: Proofs_guard.v Semantics.vo Tactics.vo Rules_guard.vo
Proofs_guard.vio: Proofs_guard.v Semantics.vio Tactics.vio Rules_guard.vio
Proofs_guard.vos Proofs_guard.vok Proofs_guard.required_vos: Proofs_guard.v Semantics.vos Tactics.vos Rules_guard.vos
Proofs_loops.vo Proofs_loops.glob Proofs_loops.v.beautified Proofs_loops.required_vo: Proofs_loops.v Semantics.vo Tactics.vo Rules_loops.vo
Proofs_loops.vio: Proofs_loops.v Semantics.vio Tactics.vio Rules_loops.vio
Proofs_loops.vos Proofs_loops.vok Proofs_loops.required_vos: Proofs_loops.v Semantics.vos Tactics.vos Rules_loops.vos
Proofs_algebra.vo Proofs_algebra.glob Proofs_algebra.v.beautified Proofs_algebra.required_vo: Proofs_algebra.v Semantics.vo Tactics.vo Rules_algebra.vo
Proofs_algebra.vio: Proofs_algebra.v Semantics.vio Tactics.vio Rules_algebra.vio
Proofs_algebra.vos Proofs_algebra.vok Proofs_algebra.required_vos: Proofs_algebra.v Semantics.vos Tactics.vos Rules_algebra.vos
Proofs_reshape.vo Proofs_reshape.glob Proofs_reshape.v.beautified Proofs_reshape.required_vo: Proofs_reshape.v Semantics.vo Tactics.vo Rules_reshape.vo
Proofs_reshape.vio: Proofs_reshape.v Semantics.vio Tactics.vio Rules_reshape.vio
Proofs_reshape.vos Proofs_reshape.vok Proofs_reshape.required_vos: Proofs_reshape.v Semantics.vos Tactics.vos Rules_reshape.vos
All.vo All.glob All.v.beautified All.required_vo: All.v Semantics.vo Instances.vo Proofs_let.vo Proofs_access.vo Proofs_guard.vo Proofs_loops.vo Proofs_algebra.vo Proofs_reshape.vo Rules_let.vo Rules_access.vo Rules_guard.vo Rules_loops.vo Rules_algebra.vo Rules_reshape.vo
All.vio: All.v Semantics.vio Instances.vio Proofs_let.vio Proofs_access.vio Proofs_guard.vio Proofs_loops.vio Proofs_algebra.vio Proofs_reshape.vio Rules_let.vio Rules_access.vio Rules_guard.vio Rules_loops.vio Rules_algebra.vio Rules_reshape.vio
All.vos All.vok All.required_vos: All.v Semantics.vos Instances.vos Proofs_let.vos Proofs_access.vos Proofs_guard.vos Proofs_loops.vos Proofs_algebra.vos Proofs_reshape.vos Rules_let.vos Rules_access.vos Rules_guard.vos Rules_loops.vos Rules_algebra.vos Rules_reshape.vos
Rules_wrong.vo Rules_wrong.glob Rules_wrong.v.beautified Rules_wrong.required_vo: Rules_wrong.v Semantics.vo
Rules_wrong.vio: Rules_wrong.v Semantics.vio
Rules_wrong.vos Rules_wrong.vok Rules_wrong.required_vos: Rules_wrong.v Semantics.vos
Refutations.vo Refutations.glob Refutations.v.beautified Refutations.required_vo: Refutations.v Semantics.vo Instances.vo Tactics.vo Rules_wrong.vo
Refutations.vio: Refutations.v Semantics.vio Instances.vio Tactics.vio Rules_wrong.vio
Refutations.vos Refutations.vok Refutations.required_vos: Refutations.v Semantics.vos Instances.vos Tactics.vos Rules_wrong.vos
