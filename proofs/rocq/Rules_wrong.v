(* Generated from rewrites/test_data/wrong.rules by rewrites/tests/rocq.rs. Do not edit: *)
(* ATL_UPDATE_ROCQ=1 cargo test -p atl-rewrites --test rocq regenerates it. *)
(* Statements of rewrites/test_data/wrong.rules. *)

From Coq Require Import ZArith List Bool.
From ATL Require Import Semantics.
Import ListNotations.
Open Scope Z_scope.
Open Scope tensor_scope.

Section Statements.
Context {K : Scalar}.

(** get_gen_unbounded: get_gen without its bounds (out-of-range reads are zero).
    [get_gen_unbounded: (gen ?i < ?n: ?e)[?k] => ?e[?i := ?k] grade: exact] *)
Definition get_gen_unbounded_stmt : Prop :=
  forall (e : Z -> T) (k : Z) (n : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  (forall (i : Z), WS sh_e (e i)) ->
  (* the left side is well-formed *)
  (1 <= length (ext 0 n :: sh_e))%nat ->
  (Acc (Gen 0 n (fun i : Z => (e i))) k) ==
  (e k).

(** trunc_pad_off_by_one: trunc_r(k, pad_r(k + 1, v)) = v (wrong amount).
    [trunc_pad_off_by_one: trunc_r(?k, pad_r(?k + 1, ?v)) => ?v if amount: 0 <= ?k grade: exact] *)
Definition trunc_pad_off_by_one_stmt : Prop :=
  forall (k : Z) (v : T) (sh_v : list Z),
  (* well-shaped metavariables *)
  WS sh_v v ->
  (* the left side is well-formed *)
  (1 <= length (sh_pad (k + 1) sh_v))%nat ->
  0 <= k ->
  k <= dim0 (sh_pad (k + 1) sh_v) ->
  (1 <= length sh_v)%nat ->
  0 <= (k + 1) ->
  (* side conditions *)
  0 <= k ->
  (TruncR (sh_pad (k + 1) sh_v) k (PadR sh_v (k + 1) v)) ==
  v.

(** split_gen_unbounded(?k): split_gen with `?k > ?hi` allowed.
    [split_gen_unbounded(?k): gen ?i in ?lo..?hi: ?e => (gen ?i in ?lo..?k: ?e) ++ (gen ?i in ?k..?hi: ?e) if lower: ?lo <= ?k grade: exact] *)
Definition split_gen_unbounded_stmt : Prop :=
  forall (e : Z -> T) (hi : Z) (k : Z) (lo : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  (forall (i : Z), WS sh_e (e i)) ->
  (* side conditions *)
  lo <= k ->
  (Gen lo hi (fun i : Z => (e i))) ==
  (Concat (ext lo k :: sh_e) (ext k hi :: sh_e) (Gen lo k (fun i : Z => (e i))) (Gen k hi (fun i : Z => (e i)))).

(** guard_lift_changes_variable: a guard on the sum's variable moved out, renamed to the bound.
    [guard_lift_changes_variable: sum ?i in ?lo..?hi: [?a < ?i] * ?e => [?a < ?lo] * (sum ?i in ?lo..?hi: ?e) grade: real] *)
Definition guard_lift_changes_variable_stmt : Prop :=
  forall (a : Z) (e : Z -> T) (hi : Z) (lo : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  (forall (i : Z), WS sh_e (e i)) ->
  (Sum lo hi (fun i : Z => (Guard (a <? i) (e i)))) ==
  (Guard (a <? lo) (Sum lo hi (fun i : Z => (e i)))).

(** guard_drop: any guard dropped without proving it.
    [guard_drop: [?p] * ?e => ?e grade: exact] *)
Definition guard_drop_stmt : Prop :=
  forall (e : T) (p : bool) (sh_e : list Z),
  (* well-shaped metavariables *)
  WS sh_e e ->
  (Guard p e) ==
  e.

(** mul_add_forgets: a * (b + c) = a * b + c.
    [mul_add_forgets: ?a * (?b + ?c) => ?a * ?b + ?c grade: real] *)
Definition mul_add_forgets_stmt : Prop :=
  forall (a : T) (b : T) (c : T) (sh_a : list Z) (sh_b : list Z) (sh_c : list Z),
  (* well-shaped metavariables *)
  WS sh_a a ->
  WS sh_b b ->
  WS sh_c c ->
  (* the left side is well-formed *)
  sh_a = [] ->
  sh_b = [] ->
  sh_b = sh_c ->
  (Mul a (Add b c)) ==
  (Add (Mul a b) c).

(** get_pad_l_wrong_sign: pad_l read with the offset added instead of subtracted.
    [get_pad_l_wrong_sign: pad_l(?c, ?e)[?k] => ?e[?k + ?c] if amount: 0 <= ?c grade: exact] *)
Definition get_pad_l_wrong_sign_stmt : Prop :=
  forall (c : Z) (e : T) (k : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  WS sh_e e ->
  (* the left side is well-formed *)
  (1 <= length (sh_pad c sh_e))%nat ->
  (1 <= length sh_e)%nat ->
  0 <= c ->
  (* side conditions *)
  0 <= c ->
  (Acc (PadL sh_e c e) k) ==
  (Acc e (k + c)).

(** get_trunc_l_no_offset: trunc_l read without the offset.
    [get_trunc_l_no_offset: trunc_l(?c, ?e)[?k] => ?e[?k] if amount: 0 <= ?c grade: exact] *)
Definition get_trunc_l_no_offset_stmt : Prop :=
  forall (c : Z) (e : T) (k : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  WS sh_e e ->
  (* the left side is well-formed *)
  (1 <= length (sh_trunc c sh_e))%nat ->
  (1 <= length sh_e)%nat ->
  0 <= c ->
  c <= dim0 sh_e ->
  (* side conditions *)
  0 <= c ->
  (Acc (TruncL sh_e c e) k) ==
  (Acc e k).

(** split_sum_skips(?k): a sum split at k that skips the term at k.
    [split_sum_skips(?k): sum ?i in ?lo..?hi: ?e => (sum ?i in ?lo..?k: ?e) + (sum ?i in ?k + 1..?hi: ?e) if lower: ?lo <= ?k if upper: ?k <= ?hi grade: real] *)
Definition split_sum_skips_stmt : Prop :=
  forall (e : Z -> T) (hi : Z) (k : Z) (lo : Z) (sh_e : list Z),
  (* well-shaped metavariables *)
  (forall (i : Z), WS sh_e (e i)) ->
  (* side conditions *)
  lo <= k ->
  k <= hi ->
  (Sum lo hi (fun i : Z => (e i))) ==
  (Add (Sum lo k (fun i : Z => (e i))) (Sum (k + 1) hi (fun i : Z => (e i)))).

(** flatten_def_swapped: flatten with row and column swapped.
    [flatten_def_swapped: flatten(?v) => gen ?i < ?r * ?c: ?v[?i % ?c][?i / ?c] if c1: shape(?v) = [?r, ?c, ..] grade: exact] *)
Definition flatten_def_swapped_stmt : Prop :=
  forall (c : Z) (r : Z) (v : T) (sh_v : list Z),
  (* well-shaped metavariables *)
  WS (r :: c :: sh_v) v ->
  (* the left side is well-formed *)
  (2 <= length (r :: c :: sh_v))%nat ->
  (Flatten (r :: c :: sh_v) v) ==
  (Gen 0 (r * c) (fun i : Z => (Acc (Acc v (i mod c)) (i / c)))).

(** gen_swap_without_transpose: exchanging two generators without transposing.
    [gen_swap_without_transpose: gen ?i in ?a..?b: gen ?j in ?c..?d: ?e => gen ?j in ?c..?d: gen ?i in ?a..?b: ?e grade: exact] *)
Definition gen_swap_without_transpose_stmt : Prop :=
  forall (a : Z) (b : Z) (c : Z) (d : Z) (e : Z -> Z -> T) (sh_e : list Z),
  (* well-shaped metavariables *)
  (forall (i : Z) (j : Z), WS sh_e (e i j)) ->
  (Gen a b (fun i : Z => (Gen c d (fun j : Z => (e i j))))) ==
  (Gen c d (fun j : Z => (Gen a b (fun i : Z => (e i j))))).

(** tile_id_wrong_tail(?k): the tiling identity dropping one element too many.
    [tile_id_wrong_tail(?k): trunc_r(cdiv(?n, ?k) * ?k - ?n + 1, flatten(split(?k, ?v))) => ?v if c1: shape(?v) = [?n, ..] if positive: 1 <= ?k grade: exact] *)
Definition tile_id_wrong_tail_stmt : Prop :=
  forall (k : Z) (n : Z) (v : T) (sh_v : list Z),
  (* well-shaped metavariables *)
  WS (n :: sh_v) v ->
  (* the left side is well-formed *)
  (1 <= length (sh_flat (sh_split k (n :: sh_v))))%nat ->
  0 <= ((((cdiv n k) * k) - n) + 1) ->
  ((((cdiv n k) * k) - n) + 1) <= dim0 (sh_flat (sh_split k (n :: sh_v))) ->
  (2 <= length (sh_split k (n :: sh_v)))%nat ->
  (1 <= length (n :: sh_v))%nat ->
  0 <= k ->
  1 <= k ->
  (* side conditions *)
  1 <= k ->
  (TruncR (sh_flat (sh_split k (n :: sh_v))) ((((cdiv n k) * k) - n) + 1) (Flatten (sh_split k (n :: sh_v)) (Split (n :: sh_v) k v))) ==
  v.

(** max_tile_partial(?q): max_tile without `?n % ?q == 0` (drops the partial last tile's values).
    [max_tile_partial(?q): max ?k < ?n: ?e => max ?ko < ?n / ?q: max ?ki < ?q: ?e[?k := ?ko * ?q + ?ki] if positive: 1 <= ?q grade: exact] *)
Definition max_tile_partial_stmt : Prop :=
  forall (e : Z -> T) (n : Z) (q : Z) (sh_e : list Z) (sbot : scalar) (smax : scalar -> scalar -> scalar),
  (* the max-reduction's function: associative, commutative, sbot its identity *)
  (forall x y z : scalar, smax x (smax y z) = smax (smax x y) z) ->
  (forall x y : scalar, smax x y = smax y x) ->
  (forall x : scalar, smax sbot x = x) ->
  (* well-shaped metavariables *)
  (forall (k : Z), WS sh_e (e k)) ->
  (* the left side is well-formed *)
  sh_e = [] ->
  (* side conditions *)
  1 <= q ->
  (MaxRed smax sbot 0 n (fun k : Z => (e k))) ==
  (MaxRed smax sbot 0 (n / q) (fun ko : Z => (MaxRed smax sbot 0 q (fun ki : Z => (e ((ko * q) + ki)))))).

End Statements.
