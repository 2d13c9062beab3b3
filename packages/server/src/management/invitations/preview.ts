import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ROLES } from '../../auth/roles.js';
import { hashSecret } from '../../auth/secrets.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';

/**
 * `GET /api/v1/invitations/{token}`: what an invitation link is for, so that the person who opens
 * it knows before accepting (issue 43). Public like the accept route, and counted per client IP by
 * the management API's rate limiter as every unauthenticated request; the token is looked up by its
 * hash as the accept route does, and the request log redacts it (`vxl_inv_…`).
 *
 * Answers only the organization's name, the role and the invited address: nothing that would help
 * someone holding a link to anything else. An unknown, accepted, revoked or expired link answers
 * 404 `not_found` in the error envelope (accepting says which of them it is, people-and-sign-in.md).
 */
export function registerInvitationPreviewRoute(app: App, services: Services): void {
  app.get(
    '/invitations/:token',
    {
      config: { public: true },
      schema: {
        tags: ['members'],
        params: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: {
          200: Type.Object({
            organization: Type.Object({ name: Type.String() }),
            role: Type.Enum(ROLES),
            email: Type.String(),
          }),
        },
      },
    },
    async (request) => {
      const invitation = await services.db
        .selectFrom('invitations')
        .innerJoin('organizations', 'organizations.id', 'invitations.organization_id')
        .select(['invitations.role', 'invitations.email', 'organizations.name'])
        .where('invitations.token_hash', '=', hashSecret(request.params.token))
        .where('invitations.accepted_at', 'is', null)
        .where('invitations.revoked_at', 'is', null)
        .where('invitations.expires_at', '>', services.clock.now().toISOString())
        .executeTakeFirst();
      if (!invitation)
        throw new ApiError(
          'not_found',
          'This invitation link is not valid: it is incomplete, or was accepted, revoked or has expired.',
        );
      return {
        organization: { name: invitation.name },
        role: invitation.role,
        email: invitation.email,
      };
    },
  );
}
