"""Types: scalars, vectors/matrices/quaternions/transforms, structs, the compiler's type system, the array protocol."""
