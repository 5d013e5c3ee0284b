"""GLSL 3.30 core programs of the OpenGL renderer.

- ``SHAPE``: instanced triangle meshes; one model matrix and two colours (a checker pattern over the texture
  coordinates when they differ) per instance, optional per-vertex colours (attribute 9 with ``w = 1``).
- ``SPHERES``: one point sprite (or, for spheres larger on screen than the largest point size, one camera-facing
  quad) per point, covering the sphere's exact perspective silhouette; the fragment shader intersects each pixel's
  ray with the sphere and writes the true depth, so a million points cost one primitive each instead of a
  tessellated sphere.
- ``LINES``: coloured line segments (grid, axes).
- ``SKY``: a full-screen triangle shaded by the world direction of each pixel's ray.
- ``PRESENT``: copies the offscreen colour (or linearised depth) image to the window.

All lighting happens in world (display) space with one directional light plus ambient and a specular highlight.
"""

SHAPE_VERTEX = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec2 a_uv;
layout(location = 3) in vec4 a_m0;
layout(location = 4) in vec4 a_m1;
layout(location = 5) in vec4 a_m2;
layout(location = 6) in vec4 a_m3;
layout(location = 7) in vec3 a_color1;
layout(location = 8) in vec3 a_color2;
layout(location = 9) in vec4 a_vcolor;
uniform mat4 u_model;
uniform mat4 u_view;
uniform mat4 u_proj;
out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out vec3 v_color1;
out vec3 v_color2;
out vec4 v_vcolor;
void main() {
    mat4 m = u_model * mat4(a_m0, a_m1, a_m2, a_m3);
    vec4 w = m * vec4(a_pos, 1.0);
    v_world = w.xyz;
    v_normal = transpose(inverse(mat3(m))) * a_normal;
    v_uv = a_uv;
    v_color1 = a_color1;
    v_color2 = a_color2;
    v_vcolor = a_vcolor;
    gl_Position = u_proj * u_view * w;
}
"""

_LIGHTING = """
uniform vec3 u_light_dir;
uniform vec3 u_camera_pos;
vec3 shade(vec3 base, vec3 n, vec3 world) {
    vec3 l = normalize(u_light_dir);
    vec3 v = normalize(u_camera_pos - world);
    float diffuse = max(dot(n, l), 0.0);
    float spec = pow(max(dot(n, normalize(l + v)), 0.0), 48.0);
    return base * (0.3 + 0.7 * diffuse) + vec3(0.18 * spec);
}
"""

SHAPE_FRAGMENT = """
#version 330 core
in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
in vec3 v_color1;
in vec3 v_color2;
in vec4 v_vcolor;
out vec4 frag_color;
""" + _LIGHTING + """
void main() {
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;
    float checker = mod(floor(v_uv.x) + floor(v_uv.y), 2.0);
    vec3 base = v_vcolor.w > 0.5 ? v_vcolor.rgb : mix(v_color1, v_color2, checker);
    frag_color = vec4(shade(base, n, v_world), 1.0);
}
"""

SPHERES_VERTEX = """
#version 330 core
layout(location = 0) in vec3 a_center;
layout(location = 1) in float a_radius;
layout(location = 2) in vec3 a_color;
uniform mat4 u_model;
uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_model_scale;
uniform int u_ortho;
uniform int u_sprite;  // 1: this pass draws point sprites, 0: camera-facing quads
uniform vec2 u_viewport_size;
uniform float u_max_point_size;
flat out vec3 v_center;
flat out float v_radius;
flat out vec3 v_color;
const vec4 CULLED = vec4(2.0, 2.0, 2.0, 1.0);  // outside the clip volume: the primitive is dropped
void main() {
    vec3 c = (u_view * u_model * vec4(a_center, 1.0)).xyz;
    float r = a_radius * u_model_scale;
    v_center = c;
    v_radius = r;
    v_color = a_color;
    vec3 right = vec3(1.0, 0.0, 0.0);
    vec3 up = vec3(0.0, 1.0, 0.0);
    float half_size = r;
    if (u_ortho == 0) {
        float d = length(c);
        if (d <= r * 1.0001) {  // the eye is inside the sphere: nothing sensible to draw
            gl_Position = CULLED;
            return;
        }
        vec3 axis = c / d;
        vec3 helper = abs(axis.y) < 0.99 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
        right = normalize(cross(axis, helper));
        up = cross(right, axis);
        // the silhouette cone (half-angle asin(r / d)) cut by the plane through the centre
        half_size = r * d / sqrt(d * d - r * r);
    }
    // the same cone cut by the plane touching the sphere's front: every pixel's ray meets it before the sphere,
    // so a quad there is never behind the surface it stands for (see depth_greater in the fragment shader)
    vec3 front_c = u_ortho == 0 ? c * (1.0 - r / length(c)) : c + vec3(0.0, 0.0, r);
    float front_half = u_ortho == 0 ? half_size * (1.0 - r / length(c)) : r;
    // The quad of corners c +- right +- up (times half_size) covers the silhouette; its projection bounds the
    // sphere's image. Small images become one point sprite (one primitive instead of two triangles).
    vec4 centre = u_proj * vec4(c, 1.0);
    float extent = 0.0;
    bool behind = centre.w <= 0.0 || (u_ortho == 0 && c.z + r >= 0.0);
    for (int k = 0; k < 4; ++k) {
        vec2 s = vec2((k & 1) == 0 ? -1.0 : 1.0, (k & 2) == 0 ? -1.0 : 1.0);
        vec4 q = u_proj * vec4(c + (s.x * right + s.y * up) * half_size, 1.0);
        behind = behind || q.w <= 0.0;
        vec2 dq = abs(q.xy / q.w - centre.xy / centre.w) * 0.5 * u_viewport_size;
        extent = max(extent, max(dq.x, dq.y));
    }
    float size = 2.0 * extent + 0.25;  // pixel centres inside the silhouette lie inside the sprite
    bool as_sprite = !behind && size <= u_max_point_size;
    if (u_sprite == 1) {
        // a sprite has one depth: that of the plane z = c.z + r, in front of every point of the sphere
        vec4 front = u_proj * vec4(c.xy, c.z + r, 1.0);
        gl_Position = as_sprite ? vec4(centre.xy / centre.w * front.w, front.z, front.w) : CULLED;
        gl_PointSize = size;
        return;
    }
    if (as_sprite) {
        gl_Position = CULLED;
        return;
    }
    vec2 corner = vec2((gl_VertexID & 1) == 0 ? -1.0 : 1.0, (gl_VertexID & 2) == 0 ? -1.0 : 1.0);
    gl_Position = u_proj * vec4(front_c + (corner.x * right + corner.y * up) * front_half, 1.0);
}
"""

SPHERES_FRAGMENT = """
#version 330 core
#extension GL_ARB_conservative_depth : enable
#ifdef GL_ARB_conservative_depth
layout(depth_greater) out float gl_FragDepth;  // never nearer than the primitive: early depth tests stay valid
#endif
flat in vec3 v_center;
flat in float v_radius;
flat in vec3 v_color;
uniform mat4 u_view;
uniform mat4 u_proj;
uniform mat4 u_inv_proj;
uniform vec4 u_viewport;
uniform int u_flat;
out vec4 frag_color;
""" + _LIGHTING + """
void main() {
    // this pixel's ray in view space, from the near to the far plane (perspective or orthographic)
    vec2 ndc = (gl_FragCoord.xy - u_viewport.xy) / u_viewport.zw * 2.0 - 1.0;
    vec4 near_p = u_inv_proj * vec4(ndc, -1.0, 1.0);
    vec4 far_p = u_inv_proj * vec4(ndc, 1.0, 1.0);
    vec3 ro = near_p.xyz / near_p.w;
    vec3 rd = normalize(far_p.xyz / far_p.w - ro);
    vec3 oc = ro - v_center;
    float b = dot(oc, rd);
    float h = b * b - (dot(oc, oc) - v_radius * v_radius);
    if (h < 0.0) discard;
    float t = -b - sqrt(h);
    vec3 hit = ro + t * rd;
    vec4 clip = u_proj * vec4(hit, 1.0);
    float ndc_z = clip.z / clip.w;
    if (ndc_z < -1.0 || ndc_z > 1.0) discard;
    gl_FragDepth = 0.5 * ndc_z + 0.5;
    if (u_flat == 1) {
        frag_color = vec4(v_color, 1.0);
        return;
    }
    mat3 to_world = transpose(mat3(u_view));  // the view matrix is a rigid motion
    vec3 n = to_world * ((hit - v_center) / v_radius);
    vec3 world = to_world * (hit - u_view[3].xyz);
    frag_color = vec4(shade(v_color, normalize(n), world), 1.0);
}
"""

LINES_VERTEX = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_color;
uniform mat4 u_mvp;
out vec3 v_color;
void main() {
    v_color = a_color;
    gl_Position = u_mvp * vec4(a_pos, 1.0);
}
"""

LINES_FRAGMENT = """
#version 330 core
in vec3 v_color;
out vec4 frag_color;
void main() { frag_color = vec4(v_color, 1.0); }
"""

SKY_VERTEX = """
#version 330 core
out vec2 v_ndc;
void main() {
    vec2 p = vec2((gl_VertexID == 1) ? 3.0 : -1.0, (gl_VertexID == 2) ? 3.0 : -1.0);
    v_ndc = p;
    gl_Position = vec4(p, 1.0, 1.0);
}
"""

SKY_FRAGMENT = """
#version 330 core
in vec2 v_ndc;
uniform mat4 u_inv_view_proj;
uniform vec3 u_sky_color;
uniform vec3 u_horizon_color;
uniform vec3 u_ground_color;
out vec4 frag_color;
void main() {
    vec4 near_p = u_inv_view_proj * vec4(v_ndc, -1.0, 1.0);
    vec4 far_p = u_inv_view_proj * vec4(v_ndc, 1.0, 1.0);
    vec3 dir = normalize(far_p.xyz / far_p.w - near_p.xyz / near_p.w);
    vec3 c = dir.y >= 0.0 ? mix(u_horizon_color, u_sky_color, pow(dir.y, 0.6))
                          : mix(u_horizon_color, u_ground_color, pow(-dir.y, 0.4));
    frag_color = vec4(c, 1.0);
}
"""

PRESENT_VERTEX = """
#version 330 core
out vec2 v_uv;
void main() {
    vec2 p = vec2((gl_VertexID == 1) ? 3.0 : -1.0, (gl_VertexID == 2) ? 3.0 : -1.0);
    v_uv = 0.5 * p + 0.5;
    gl_Position = vec4(p, 0.0, 1.0);
}
"""

PRESENT_FRAGMENT = """
#version 330 core
in vec2 v_uv;
uniform sampler2D u_color;
uniform sampler2D u_depth;
uniform int u_show_depth;
uniform float u_near;
uniform float u_far;
out vec4 frag_color;
void main() {
    if (u_show_depth == 1) {
        float z = 2.0 * texture(u_depth, v_uv).r - 1.0;
        float d = 2.0 * u_near * u_far / (u_far + u_near - z * (u_far - u_near));
        float g = clamp((d - u_near) / (u_far - u_near), 0.0, 1.0);
        frag_color = vec4(vec3(1.0 - g), 1.0);
    } else {
        frag_color = vec4(texture(u_color, v_uv).rgb, 1.0);
    }
}
"""
